/**
 * The whitepaper's Appendix A.4 example as data: a gig for a small JavaScript module that must pass a
 * hash-anchored suite of 12 tests. The provider's first delivery fails 3 of them.
 */
import type { Address } from "viem";

import { bundleHash, type Bundle } from "../../arbitration/documents/bundle";
import { icsFromJson, type Ics } from "../../arbitration/documents/ics";

/**
 * The client's test suite: `run.js` registers one test per case with the judge's harness (`ioi:harness`)
 * and reaches the provider's `strings.js` only through `call`, which runs the deliverable in a separate
 * sealed engine instance: nothing the deliverable does can touch the suite or its verdict.
 */
export const SUITE: Bundle = {
  files: {
    "run.js": [
      '"use strict";',
      'const { test, call, equal } = require("ioi:harness");',
      'const { cases } = require("./cases.js");',
      "for (const [name, fn, args, expected] of cases) {",
      '  test(name, () => equal(call(fn, args, { module: "strings.js" }), expected));',
      "}",
      "",
    ].join("\n"),
    "cases.js": [
      "exports.cases = [",
      '  ["slug_simple", "slugify", ["Hello World"], "hello-world"],',
      '  ["slug_trim", "slugify", ["  padded  "], "padded"],',
      '  ["slug_symbols", "slugify", ["a & b!"], "a-b"],',
      '  ["slug_repeat", "slugify", ["a   b"], "a-b"],',
      '  ["slug_empty", "slugify", [""], ""],',
      '  ["slug_digits", "slugify", ["Route 66"], "route-66"],',
      '  ["cap_word", "capitalize", ["word"], "Word"],',
      '  ["cap_empty", "capitalize", [""], ""],',
      '  ["cap_upper", "capitalize", ["ALREADY"], "ALREADY"],',
      '  ["trunc_short", "truncate", ["abc", 5], "abc"],',
      '  ["trunc_long", "truncate", ["abcdefgh", 5], "ab..."],',
      '  ["trunc_exact", "truncate", ["abcde", 5], "abcde"],',
      "];",
      "",
    ].join("\n"),
  },
};

/** Compiles and passes 9 of 12: it forgets to trim, to collapse runs of separators, and truncates one short. */
export const FAILING_DELIVERABLE: Bundle = {
  files: {
    "strings.js": [
      '"use strict";',
      'exports.slugify = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, "-").replace(/^-|-$/g, "");',
      "exports.capitalize = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);",
      'exports.truncate = (s, n) => (s.length <= n ? s : s.slice(0, n - 3) + "...");',
      "",
    ].join("\n"),
  },
};

/** Passes all 12. */
export const PASSING_DELIVERABLE: Bundle = {
  files: {
    "strings.js": [
      '"use strict";',
      'exports.slugify = (s) => s.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");',
      "exports.capitalize = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);",
      'exports.truncate = (s, n) => (s.length <= n ? s : s.slice(0, n - 3) + "...");',
      "",
    ].join("\n"),
  },
};

/** The Intent Contract Schema: rubric {passes_tests, language, max_lines} and the penalty schedule. */
export function codeGigIcs(parameters: { asset: Address; maxPrice: bigint; deadline: bigint }): Ics {
  return icsFromJson({
    ics_version: 1,
    task: "Write strings.js exporting slugify, capitalize and truncate so that the bound test suite passes.",
    asset: parameters.asset.toLowerCase(),
    max_price: parameters.maxPrice.toString(),
    deadline: parameters.deadline.toString(),
    rubric: {
      version: 1,
      items: [
        { id: "passes_tests", kind: "test_suite" },
        { id: "language", kind: "language", expect: "javascript" },
        { id: "max_lines", kind: "max_lines", limit: 500 },
        { id: "no_dynamic_code", kind: "forbidden_content", patterns: ["eval(", "new Function", "child_process"] },
      ],
    },
    test_suite: { hash: bundleHash(SUITE), runner: { command: ["node", "run.js"], timeout_ms: 10_000, max_output_bytes: 65_536 } },
    penalty_schedule: {
      // Refund half of the bounty for any objective failure plus 10% per failing test; slash the provider's
      // SLA bond 10 LGAS plus 5 LGAS per failing test.
      objective_failure: { refund_bps: 5_000, slash: "10000000000000000000" },
      per_failed_test: { refund_bps: 1_000, slash: "5000000000000000000" },
      unserviceable: { compute_spent_bps: 1_000 },
    },
  });
}
