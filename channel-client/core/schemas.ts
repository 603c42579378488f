/**
 * The published JSON Schemas (`schemas/*.schema.json`, shipped in the package) of every document a third
 * party produces or checks — terms, packets, ChallengePackage, ICS, Resolution, UPIP record — compiled with
 * Ajv, and the one function that checks a document against its schema and turns the first violation into
 * the typed error a hand-written check would have thrown: one sentence naming the field (decision 0021).
 */
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import { readFileSync } from "node:fs";
import path from "node:path";

import { AmountAsNumberError, InvalidFieldError, UnknownFieldError } from "./errors";
import { PACKAGE_ROOT } from "./package-root";

export const SCHEMA_NAMES = ["terms", "packet", "ics", "challenge-package", "resolution", "upip", "progress-proof"] as const;
export type SchemaName = (typeof SCHEMA_NAMES)[number];

/** Where a schema lives in the package (`ioi-settlement/schemas/<name>.schema.json`). */
export function schemaPath(name: SchemaName): string {
  return path.join(PACKAGE_ROOT, "schemas", `${name}.schema.json`);
}

// verbose: errors carry their parent schema, whose `description` words the expectation.
const ajv = new Ajv({ strict: true, allErrors: false, allowUnionTypes: true, verbose: true });
const compiled = new Map<SchemaName, ValidateFunction>();

/** The schema document itself (parsed JSON). */
export function jsonSchemaOf(name: SchemaName): Record<string, unknown> {
  return JSON.parse(readFileSync(schemaPath(name), "utf8")) as Record<string, unknown>;
}

/**
 * The compiled validator of a published schema (compiled once per process), or of one of its
 * `definitions` (`schemaValidator("challenge-package", "evidence")`) for a parser of a part of a document.
 */
export function schemaValidator(name: SchemaName, definition?: string): ValidateFunction {
  let validate = compiled.get(name);
  if (!validate) {
    validate = ajv.compile(jsonSchemaOf(name));
    compiled.set(name, validate);
  }
  if (definition === undefined) return validate;
  const part = ajv.getSchema(`${(validate.schema as { $id: string }).$id}#/definitions/${definition}`);
  if (!part) throw new RangeError(`The ${name} schema has no definition "${definition}".`);
  return part;
}

/** `/rubric/items/0/id` → `.rubric.items[0].id`. */
function fieldPath(root: string, pointer: string): string {
  let out = root;
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(part) ? `[${part}]` : `.${part}`;
  }
  return out;
}

function valueAt(document: unknown, pointer: string): unknown {
  let value = document;
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[part] : undefined;
  }
  return value;
}

/** What a violated keyword asked for, as words (the schema's own description when it has one). */
function expectation(error: ErrorObject): string {
  const described = (error.parentSchema as { description?: unknown } | undefined)?.description;
  if (typeof described === "string" && ["type", "pattern", "maxLength", "minLength"].includes(error.keyword)) return described;
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "const":
      return JSON.stringify(p.allowedValue);
    case "enum":
      return `one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(", ")}`;
    case "type":
      return `of type ${String(p.type)}`;
    case "pattern":
      return `a string matching ${String(p.pattern)}`;
    case "minimum":
    case "maximum":
      return `${error.keyword === "minimum" ? "at least" : "at most"} ${String(p.limit)}`;
    case "minItems":
    case "maxItems":
      return `an array of ${error.keyword === "minItems" ? "at least" : "at most"} ${String(p.limit)} items`;
    case "minLength":
    case "maxLength":
      return `a string of ${error.keyword === "minLength" ? "at least" : "at most"} ${String(p.limit)} characters`;
    case "minProperties":
    case "maxProperties":
      return `an object with ${error.keyword === "minProperties" ? "at least" : "at most"} ${String(p.limit)} entries`;
    case "false schema":
      return "absent in this document (it belongs to another kind)";
    case "oneOf":
      return "exactly one of the forms the schema allows";
    default:
      return `valid (${error.message ?? error.keyword})`;
  }
}

/**
 * Checks `document` against the published schema `name` (or its definition `definition`); throws the typed error of the first violation:
 * `UnknownFieldError` for a field the schema does not define, `AmountAsNumberError` for a JSON number where a
 * decimal string is required, otherwise `InvalidFieldError` naming the field, what it must be and what it was.
 */
export function assertMatchesSchema(name: SchemaName, document: unknown, root: string, definition?: string): void {
  const validate = schemaValidator(name, definition);
  if (validate(document)) return;
  const error = validate.errors![0]!;
  const field = fieldPath(root, error.instancePath);
  const value = valueAt(document, error.instancePath);
  if (error.keyword === "additionalProperties") throw new UnknownFieldError(`${field}.${String(error.params.additionalProperty)}`);
  if (error.keyword === "required") throw new InvalidFieldError(`${field}.${String(error.params.missingProperty)}`, "present", undefined);
  const decimal = (error.parentSchema as { description?: string } | undefined)?.description?.includes("decimal string");
  if (decimal && (typeof value === "number" || typeof value === "bigint")) throw new AmountAsNumberError(field, value);
  throw new InvalidFieldError(field, expectation(error), value);
}
