/**
 * Fuel: a deterministic meter of all work an engine instance does, native operations included.
 *
 * QuickJS's own interrupt handler runs only between bytecode instructions (every few thousand branches and
 * calls), so a single native operation — a BigInt power, `toString` of a million-bit BigInt, a regular
 * expression that backtracks, a sort — runs unmetered between two checks. Fuel closes that gap one level
 * down, in the WebAssembly the engine is compiled to: {@link meterWasm} rewrites the engine's bytes so that
 * every function entry and every iteration of every `loop` takes one unit from an exported mutable i64
 * global ({@link FUEL_EXPORT}) and traps (`unreachable`) as soon as the global goes below zero. Every native
 * loop of QuickJS (its interpreter's dispatch loop, its BigInt limb loops, its regexp backtracking, its
 * string builders) therefore pays as it goes, and exhaustion stops the instance at the very unit where it
 * happens — the same unit on every machine, because WebAssembly's control flow is the same everywhere.
 *
 * The host sets the global before a phase (its budget) and reads it after (what was used). A trap with the
 * global below zero is exhaustion of that instance: the side that owns the instance caused it. The trapped
 * instance is left in whatever state the trap found it in and is never used again.
 *
 * The metered bytes are derived from the pinned engine bytes by this pure function, so the judge runtime
 * hash (which commits to the engine's bytes) and {@link FUEL_METER_VERSION} together fix the meter.
 *
 * Instructions the rewriter does not know (SIMD, exception handling, tail calls...) make it refuse the
 * module: a different engine build fails loudly instead of being metered wrongly.
 */

/** Bumped whenever the rewriting changes what is counted. */
export const FUEL_METER_VERSION = 2;

/** The export under which the metered module exposes its fuel global (mutable i64). */
export const FUEL_EXPORT = "ioi_fuel";

/** The engine's bytes use something the meter cannot rewrite. */
export class FuelMeterError extends Error {
  override name = "FuelMeterError" as const;
}

class Reader {
  constructor(
    readonly bytes: Uint8Array,
    public pos = 0,
  ) {}
  byte(): number {
    if (this.pos >= this.bytes.length) throw new FuelMeterError("unexpected end of the module");
    return this.bytes[this.pos++]!;
  }
  u32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 35) throw new FuelMeterError("LEB128 too long");
    }
  }
  /** Skips a LEB128 (signed or unsigned) of any width. */
  skipLeb(): void {
    for (let i = 0; i < 10; i++) if ((this.byte() & 0x80) === 0) return;
    throw new FuelMeterError("LEB128 too long");
  }
  skip(n: number): void {
    this.pos += n;
    if (this.pos > this.bytes.length) throw new FuelMeterError("unexpected end of the module");
  }
}

function leb(value: number): number[] {
  const out: number[] = [];
  do {
    let b = value % 128;
    value = Math.floor(value / 128);
    if (value !== 0) b |= 0x80;
    out.push(b);
  } while (value !== 0);
  return out;
}

/** Signed LEB128 of a non-negative integer. */
function sleb(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = value % 128;
    value = Math.floor(value / 128);
    if (value === 0 && (b & 0x40) === 0) return [...out, b];
    out.push(b | 0x80);
  }
}

/** Fuel the module starts with, for its own start-up (the host sets the budget before it runs anything). */
export const INITIAL_FUEL = 1_000_000_000;

function name(text: string): number[] {
  const bytes = [...new TextEncoder().encode(text)];
  return [...leb(bytes.length), ...bytes];
}

/** global.get G; i64.const 1; i64.sub; global.set G; global.get G; i64.const 0; i64.lt_s; if; unreachable; end */
function charge(global: number): number[] {
  const g = leb(global);
  return [0x23, ...g, 0x42, 0x01, 0x7d, 0x24, ...g, 0x23, ...g, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b];
}

const VALTYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);

function skipBlockType(r: Reader): void {
  const b = r.bytes[r.pos]!;
  if (b === 0x40 || VALTYPES.has(b)) r.skip(1);
  else r.skipLeb();
}

/**
 * Before `memory.copy` / `memory.fill` (length on top of the stack): keep the length in `local`, and charge
 * one unit per {@link BULK_BYTES_PER_UNIT} bytes, trapping if that empties the fuel.
 */
function chargeBulk(global: number, local: number): number[] {
  const g = leb(global);
  const l = leb(local);
  return [0x22, ...l, 0x23, ...g, 0x20, ...l, 0xad, 0x42, 0x06, 0x88, 0x7d, 0x24, ...g, 0x23, ...g, 0x42, 0x00, 0x53, 0x04, 0x40, 0x00, 0x0b];
}

/** Bytes of `memory.copy` / `memory.fill` per unit of fuel (2^6). */
export const BULK_BYTES_PER_UNIT = 64;

/**
 * Rewrites one function body's expression, inserting a charge after every `loop` header and before every
 * bulk memory operation; returns the new expression bytes (with a charge at its start too).
 */
function meterExpression(r: Reader, end: number, global: number, scratch: number): number[] {
  const out: number[] = [...charge(global)];
  let from = r.pos;
  const flush = () => {
    for (let i = from; i < r.pos; i++) out.push(r.bytes[i]!);
    from = r.pos;
  };
  while (r.pos < end) {
    const op = r.byte();
    switch (true) {
      case op === 0x03: // loop bt
        skipBlockType(r);
        flush();
        out.push(...charge(global));
        break;
      case op === 0x02 || op === 0x04: // block, if
        skipBlockType(r);
        break;
      case op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x1a || op === 0x1b || op === 0xd1:
        break;
      case op === 0x0c || op === 0x0d || op === 0x10 || (op >= 0x20 && op <= 0x26) || op === 0xd2:
        r.u32();
        break;
      case op === 0x0e: {
        const n = r.u32();
        for (let i = 0; i <= n; i++) r.u32();
        break;
      }
      case op === 0x11: // call_indirect type table
        r.u32();
        r.u32();
        break;
      case op === 0x1c: {
        const n = r.u32();
        r.skip(n);
        break;
      }
      case op >= 0x28 && op <= 0x3e: // loads and stores: memarg
        r.u32();
        r.u32();
        break;
      case op === 0x3f || op === 0x40:
        r.skip(1);
        break;
      case op === 0x41 || op === 0x42:
        r.skipLeb();
        break;
      case op === 0x43:
        r.skip(4);
        break;
      case op === 0x44:
        r.skip(8);
        break;
      case op >= 0x45 && op <= 0xc4:
        break;
      case op === 0xd0:
        r.skip(1);
        break;
      case op === 0xfc: {
        const at = r.pos - 1;
        const sub = r.u32();
        if (sub === 10 || sub === 11) {
          // Emit everything before this instruction, then the bulk charge, then the instruction itself.
          const opStart = r.pos;
          r.pos = at;
          flush();
          out.push(...chargeBulk(global, scratch));
          r.pos = opStart;
        }
        if (sub <= 7) break;
        if (sub === 8) (r.u32(), r.skip(1));
        else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) r.u32();
        else if (sub === 10) r.skip(2);
        else if (sub === 11) r.skip(1);
        else if (sub === 12 || sub === 14) (r.u32(), r.u32());
        else throw new FuelMeterError(`unknown instruction 0xfc ${sub}`);
        break;
      }
      default:
        throw new FuelMeterError(`instruction 0x${op.toString(16)} at byte ${r.pos - 1} is not one the meter knows`);
    }
  }
  flush();
  return out;
}

/**
 * Returns the module with a fuel meter (see the module comment): a new mutable i64 global, exported as
 * {@link FUEL_EXPORT}, charged at every function entry and loop iteration.
 */
export function meterWasm(input: Uint8Array): Uint8Array {
  const r = new Reader(input);
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  for (const b of magic) if (r.byte() !== b) throw new FuelMeterError("not a WebAssembly 1.0 module");
  const sections: Array<{ id: number; body: Uint8Array }> = [];
  while (r.pos < input.length) {
    const id = r.byte();
    const size = r.u32();
    sections.push({ id, body: input.subarray(r.pos, r.pos + size) });
    r.skip(size);
  }
  // The new global's index: after every imported and defined global.
  let importedGlobals = 0;
  const imports = sections.find((s) => s.id === 2);
  if (imports) {
    const ir = new Reader(imports.body);
    for (let n = ir.u32(); n > 0; n--) {
      ir.skip(ir.u32());
      ir.skip(ir.u32());
      const kind = ir.byte();
      if (kind === 0) ir.u32();
      else if (kind === 1) (ir.skip(1), ir.u32() & 1 ? (ir.u32(), ir.u32()) : ir.u32());
      else if (kind === 2) (ir.u32() & 1 ? (ir.u32(), ir.u32()) : ir.u32());
      else if (kind === 3) (ir.skip(1), ir.skip(1), importedGlobals++);
      else throw new FuelMeterError(`unknown import kind ${kind}`);
    }
  }
  const globals = sections.find((s) => s.id === 6);
  if (!globals) throw new FuelMeterError("the module defines no globals");
  const gr = new Reader(globals.body);
  const defined = gr.u32();
  const fuelIndex = importedGlobals + defined;
  // (mut i64) initialised to INITIAL_FUEL: the module's start-up runs on it.
  globals.body = new Uint8Array([...leb(defined + 1), ...globals.body.subarray(gr.pos), 0x7e, 0x01, 0x42, ...sleb(INITIAL_FUEL), 0x0b]);
  const exportSection = sections.find((s) => s.id === 7);
  if (!exportSection) throw new FuelMeterError("the module exports nothing");
  const er = new Reader(exportSection.body);
  const exported = er.u32();
  exportSection.body = new Uint8Array([...leb(exported + 1), ...exportSection.body.subarray(er.pos), ...name(FUEL_EXPORT), 0x03, ...leb(fuelIndex)]);

  // Parameter counts of each defined function (its scratch local goes after its parameters and locals).
  const typeParams: number[] = [];
  const typeSection = sections.find((s) => s.id === 1);
  if (typeSection) {
    const tr = new Reader(typeSection.body);
    for (let n = tr.u32(); n > 0; n--) {
      if (tr.byte() !== 0x60) throw new FuelMeterError("a type that is not a function type");
      const params = tr.u32();
      tr.skip(params);
      tr.skip(tr.u32());
      typeParams.push(params);
    }
  }
  const functionTypes: number[] = [];
  const functionSection = sections.find((s) => s.id === 3);
  if (functionSection) {
    const fr = new Reader(functionSection.body);
    for (let n = fr.u32(); n > 0; n--) functionTypes.push(fr.u32());
  }

  const code = sections.find((s) => s.id === 10);
  if (!code) throw new FuelMeterError("the module has no code");
  const cr = new Reader(code.body);
  const bodies: number[] = [];
  const count = cr.u32();
  bodies.push(...leb(count));
  for (let i = 0; i < count; i++) {
    const size = cr.u32();
    const end = cr.pos + size;
    const groups = cr.u32();
    const groupStart = cr.pos;
    let declared = 0;
    for (let n = groups; n > 0; n--) (declared += cr.u32(), cr.skip(1));
    // One more i32 local: the scratch that holds a bulk operation's length.
    const locals = [...leb(groups + 1), ...code.body.subarray(groupStart, cr.pos), 0x01, 0x7f];
    const params = typeParams[functionTypes[i]!];
    if (params === undefined) throw new FuelMeterError(`function ${i} has no type`);
    const expression = meterExpression(cr, end, fuelIndex, params + declared);
    if (cr.pos !== end) throw new FuelMeterError(`function ${i} does not end where its size says`);
    const body = [...locals, ...expression];
    bodies.push(...leb(body.length));
    for (const b of body) bodies.push(b);
  }
  code.body = new Uint8Array(bodies);

  const out: number[] = [...magic];
  for (const section of sections) {
    out.push(section.id, ...leb(section.body.length));
    for (const b of section.body) out.push(b);
  }
  return new Uint8Array(out);
}
