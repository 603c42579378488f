/**
 * Input documents of arbitration (ChallengePackage, ICS) in JSON or YAML, reduced to one plain JSON value.
 *
 * YAML is read as YAML 1.2 with the core schema only, and everything that could make two nodes read the
 * same text differently, or blow up, is refused: anchors and aliases, explicit tags, directives other than
 * `%YAML 1.2`, duplicate keys, non-string keys and multiple documents. In both formats every number must be
 * a safe integer, nesting is limited to 64 levels and the result must survive canonical JSON, so JSON and
 * YAML spellings of the same content give the same canonical value (and so the same artifact ids).
 *
 * Also here: the small field assertions the ICS, package, UPIP and resolution parsers share beyond those
 * of `channel-client/core/validate.ts`.
 */
import { isAlias, isCollection, isMap, isScalar, Lexer, parseDocument as parseYamlDocument, visit, type Node } from "yaml";

import { canon, MAX_JSON_DEPTH, parseJson } from "../../channel-client/core/canonical";
import { InvalidFieldError, SizeLimitError } from "../../channel-client/core/errors";
import { InvalidDocumentError, InvalidYamlError } from "./errors";

export type DocumentFormat = "json" | "yaml" | "auto";

/** Largest document accepted by default: 4 MiB of UTF-8. */
export const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;

/** Deepest nesting accepted (the channel-client limit). */
export const MAX_DOCUMENT_DEPTH = MAX_JSON_DEPTH;

export type ParseDocumentOptions = {
  /** `auto` (the default) reads a document whose first non-blank character is `{` or `[` as JSON, else as YAML. */
  format?: DocumentFormat;
  /** Largest input accepted in UTF-8 bytes; default {@link MAX_DOCUMENT_BYTES}. */
  maxBytes?: number;
  /** Name used in error messages, e.g. "ChallengePackage". */
  what?: string;
};

/**
 * Parses `text` as JSON or YAML and returns the plain JSON value it holds (objects with the prototype of
 * `JSON.parse` output). Throws {@link SizeLimitError}, {@link InvalidJsonError}, {@link InvalidYamlError} or
 * {@link InvalidDocumentError} (and channel-client's `InvalidJsonError`); never anything untyped.
 */
export function parseDocument(text: string | Uint8Array, options: ParseDocumentOptions = {}): unknown {
  const { maxBytes = MAX_DOCUMENT_BYTES, what = "The document" } = options;
  const size = typeof text === "string" ? Buffer.byteLength(text, "utf8") : text.byteLength;
  if (size > maxBytes) throw new SizeLimitError(what, size, maxBytes);
  let source: string;
  try {
    source = typeof text === "string" ? text : new TextDecoder("utf-8", { fatal: true }).decode(text);
  } catch (cause) {
    throw new InvalidDocumentError(what, "is not valid UTF-8.", { cause });
  }
  const format = options.format === undefined || options.format === "auto" ? detectFormat(source) : options.format;
  const value = format === "json" ? parseJson(source, { maxBytes, what }) : parseYaml(source, what);
  assertPlainNumbers(value, what);
  // The canonical round trip refuses what canonical JSON cannot hold (lone surrogates...) and leaves one
  // plain representation whichever parser produced the value.
  return JSON.parse(canon(value)) as unknown;
}

function detectFormat(source: string): "json" | "yaml" {
  const first = source.replace(/^\uFEFF/, "").trimStart()[0];
  return first === "{" || first === "[" ? "json" : "yaml";
}

/**
 * `uniqueKeys` is off because the library checks it in quadratic time (100 000 keys take minutes);
 * {@link assertPlainYaml} refuses duplicate keys with a set instead, which is the same rule for the
 * string-only keys accepted here.
 */
const YAML_OPTIONS = {
  version: "1.2",
  schema: "core",
  uniqueKeys: false,
  merge: false,
  strict: true,
  prettyErrors: true,
  intAsBigInt: false,
  stringKeys: false,
} as const;

function parseYaml(source: string, what: string): unknown {
  assertYamlShallow(source, what);
  let doc: ReturnType<typeof parseYamlDocument>;
  try {
    doc = parseYamlDocument(source, YAML_OPTIONS);
  } catch (cause) {
    throw new InvalidYamlError(`${what} could not be parsed as YAML.`, { cause });
  }
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    throw new InvalidYamlError(`${what} is not acceptable YAML: ${problem.code}.`, {
      details: problem.message.split("\n")[0],
    });
  }
  if (doc.directives?.yaml.explicit && doc.directives.yaml.version !== "1.2") {
    throw new InvalidYamlError(`${what} declares YAML ${doc.directives.yaml.version}; only YAML 1.2 is read.`);
  }
  if (doc.contents !== null) assertPlainYaml(doc.contents as Node, source, what);
  try {
    return doc.toJS({ maxAliasCount: 0 }) as unknown;
  } catch (cause) {
    throw new InvalidYamlError(`${what} could not be converted to plain data.`, { cause });
  }
}

/** Farthest column at which a block collection may start; bounds block nesting at about twice this. */
const MAX_BLOCK_COLUMN = 256;

/**
 * Most lexer tokens a YAML document may have. The parser handles a few hundred thousand nodes a second,
 * so this keeps the worst 4 MiB document to about a second; real packages have a few thousand tokens
 * (file contents are single scalar tokens however long).
 */
export const MAX_YAML_TOKENS = 100_000;

/**
 * A linear pre-scan over the YAML lexer's tokens, before the parser runs: the `yaml` parser needs time and
 * memory superlinear in the nesting depth (4 MiB of `[` or of `- ` exhausts the heap and aborts the
 * process), so depth must be bounded first. Flow nesting (`[`, `{`) is counted exactly and refused beyond
 * {@link MAX_DOCUMENT_DEPTH}, and so is a document of more than {@link MAX_YAML_TOKENS} tokens. A block collection starts at a line's first token or right after a `- `, `? `
 * or line-leading `: ` indicator, and every nested block collection starts at a greater column than its
 * parent (or the same column, for a sequence under a mapping key); refusing such starting points beyond
 * column {@link MAX_BLOCK_COLUMN} bounds block depth. The exact 64-level limit is applied after parsing.
 */
function assertYamlShallow(source: string, what: string): void {
  let flow = 0;
  let column = 0;
  let lineStart = true;
  let afterIndicator = false;
  let tokens = 0;
  for (const token of new Lexer().lex(source)) {
    if (++tokens > MAX_YAML_TOKENS) {
      throw new InvalidYamlError(`${what} has more than ${MAX_YAML_TOKENS} YAML tokens; use JSON for documents this fragmented.`);
    }
    const first = token.charCodeAt(0);
    if (token.length === 1 && (first === 0x02 || first === 0x18 || first === 0x1f || first === 0xfeff)) continue; // markers
    if (/^[\r\n]+$/.test(token)) {
      column = 0;
      lineStart = true;
      afterIndicator = false;
      continue;
    }
    if (/^[ \t]+$/.test(token) || first === 0x23 /* # comment */) {
      column += token.length;
      continue;
    }
    if (token === "[" || token === "{") {
      if (++flow > MAX_DOCUMENT_DEPTH) throw new InvalidYamlError(`${what} nests deeper than ${MAX_DOCUMENT_DEPTH} levels.`);
    } else if (token === "]" || token === "}") {
      flow = Math.max(0, flow - 1);
    } else if (flow === 0 && (lineStart || afterIndicator) && column > MAX_BLOCK_COLUMN) {
      throw new InvalidYamlError(`${what} starts a block node at column ${column}; nesting that deep is refused.`);
    }
    afterIndicator = flow === 0 && (token === "-" || token === "?" || (token === ":" && lineStart));
    lineStart = false;
    const newline = token.lastIndexOf("\n");
    if (newline >= 0) {
      column = token.length - newline - 1;
      lineStart = column === 0;
    } else {
      column += token.length;
    }
  }
}

/** Refuses anchors, aliases, explicit tags, non-string keys and deep nesting, before any conversion. */
function assertPlainYaml(root: Node, source: string, what: string): void {
  let failure: InvalidYamlError | undefined;
  visit(root, {
    Node(_key, node, path) {
      const where = (): string => `${what} (line ${lineOf(source, node)})`;
      if (isAlias(node)) failure = new InvalidYamlError(`${where()} uses an alias (*${node.source}); aliases are refused.`);
      else if (node.anchor) failure = new InvalidYamlError(`${where()} defines an anchor (&${node.anchor}); anchors are refused.`);
      else if (hasExplicitTag(node)) {
        failure = new InvalidYamlError(`${where()} has the explicit tag ${node.tag}; tags are refused.`);
      } else if (isCollection(node) && path.filter((p) => isCollection(p)).length >= MAX_DOCUMENT_DEPTH) {
        failure = new InvalidYamlError(`${where()} nests deeper than ${MAX_DOCUMENT_DEPTH} levels.`);
      }
      if (!failure && isMap(node)) {
        const keys = new Set<string>();
        for (const pair of node.items) {
          if (!isScalar(pair.key) || typeof pair.key.value !== "string") {
            failure = new InvalidYamlError(`${where()} has a mapping key that is not a string; quote it.`);
            break;
          }
          if (keys.has(pair.key.value)) {
            failure = new InvalidYamlError(`${where()} repeats the key ${JSON.stringify(pair.key.value)} (DUPLICATE_KEY).`);
            break;
          }
          keys.add(pair.key.value);
        }
      }
      return failure ? visit.BREAK : undefined;
    },
  });
  if (failure) throw failure;
}

/**
 * A node's `tag` is set only from an explicit tag in the source (the core schema resolves plain scalars
 * without setting it), so any tag at all is explicit.
 */
function hasExplicitTag(node: Node): boolean {
  return typeof node.tag === "string" && node.tag.length > 0;
}

/** 1-based line of a node's first character. */
function lineOf(source: string, node: Node): number {
  const offset = node.range?.[0] ?? 0;
  let line = 1;
  for (let i = 0; i < offset && i < source.length; i++) if (source.charCodeAt(i) === 0x0a) line++;
  return line;
}

/** Every number must be a safe integer: amounts are strings, and a float or a huge integer would round. */
function assertPlainNumbers(value: unknown, what: string): void {
  const stack: Array<{ v: unknown; path: string }> = [{ v: value, path: what }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === "number") {
      if (!Number.isSafeInteger(v)) {
        throw new InvalidDocumentError(path, `is the number ${v}; documents may hold only safe integers (write amounts as decimal strings).`);
      }
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: `${path}[${i}]` }));
    } else if (typeof v === "object" && v !== null) {
      for (const [key, item] of Object.entries(v)) stack.push({ v: item, path: `${path}.${key}` });
    }
  }
}

/*//////////////////////////////////////////////////////////////
                      SHARED FIELD ASSERTIONS
//////////////////////////////////////////////////////////////*/

/** A JSON integer (a number, not a string) within `min..max`. */
export function expectInt(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new InvalidFieldError(path, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

/** `true` or `false`. */
export function expectBoolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") throw new InvalidFieldError(path, "true or false", value);
  return value;
}

/** An array of `min..max` items. */
export function expectArray(value: unknown, path: string, min: number, max: number): unknown[] {
  if (!Array.isArray(value) || value.length < min || value.length > max) {
    throw new InvalidFieldError(path, `an array of ${min} to ${max} items`, value);
  }
  return value;
}

/** `null`, or what `expect` accepts. */
export function expectNullable<T>(value: unknown, path: string, expect: (v: unknown, p: string) => T): T | null {
  return value === null ? null : expect(value, path);
}

/** A string of 1..`maxLength` characters matching `pattern`, described as `expected` in errors. */
export function expectPattern(value: unknown, path: string, pattern: RegExp, maxLength: number, expected: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > maxLength || !pattern.test(value)) {
    throw new InvalidFieldError(path, expected, value);
  }
  return value;
}
