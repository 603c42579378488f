import { expect } from "chai";

import { canon } from "../../channel-client/core/canonical";
import { parseDocument } from "../../arbitration/documents/document";
import { parsePackage, packageHash, packageFromJson } from "../../arbitration/documents/package";
import { thrown } from "../helpers/assert";
import { samplePackageJson } from "./fixtures/samples";

/** `value` as block YAML, every string double-quoted (JSON strings are valid YAML double-quoted scalars). */
function toYaml(value: unknown, indent = ""): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return value.map((item) => `\n${indent}- ${toYaml(item, `${indent}  `).replace(/^\n\s*/, "")}`).join("");
  }
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value);
    if (entries.length === 0) return "{}";
    return entries
      .map(([key, item]) => {
        const rendered = toYaml(item, `${indent}  `);
        return `\n${indent}${JSON.stringify(key)}:${rendered.startsWith("\n") ? rendered : ` ${rendered}`}`;
      })
      .join("");
  }
  return JSON.stringify(value);
}

describe("arbitration/document", () => {
  describe("JSON and YAML give the same canonical value", () => {
    it("for a small document", () => {
      const json = '{"b": [1, 2, {"c": null}], "a": "x", "t": true}';
      const yaml = 'a: x\nb:\n  - 1\n  - 2\n  - c: null\nt: true\n';
      expect(canon(parseDocument(json))).to.equal(canon(parseDocument(yaml)));
      expect(canon(parseDocument(yaml, { format: "yaml" }))).to.equal('{"a":"x","b":[1,2,{"c":null}],"t":true}');
    });

    it("for a full ChallengePackage, down to the package hash", () => {
      const json = JSON.stringify(samplePackageJson(), null, 2);
      const yaml = toYaml(samplePackageJson()).replace(/^\n/, "") + "\n";
      const fromJson = parsePackage(json, "json");
      const fromYaml = parsePackage(yaml, "yaml");
      const auto = parsePackage(yaml);
      expect(fromYaml).to.deep.equal(fromJson);
      expect(auto).to.deep.equal(fromJson);
      expect(packageHash(fromYaml)).to.equal(packageHash(fromJson));
      expect(packageHash(packageFromJson(samplePackageJson()))).to.equal(packageHash(fromJson));
    });

    it("with YAML 1.2 core scalars: yes/no/on are strings, 0o17 and 0x1F are integers, dates are strings", () => {
      expect(parseDocument("a: yes\nb: on\nc: 0o17\nd: 0x1F\ne: 2001-12-14\nf: 012\n")).to.deep.equal({
        a: "yes",
        b: "on",
        c: 15,
        d: 31,
        e: "2001-12-14",
        f: 12,
      });
    });

    it("auto-detects JSON by a leading { or [", () => {
      expect(parseDocument('  [1, "a"]')).to.deep.equal([1, "a"]);
      expect(parseDocument("- 1\n- a\n")).to.deep.equal([1, "a"]);
    });

    it("keeps a __proto__ key as data in both formats", () => {
      const fromJson = parseDocument('{"__proto__": {"x": 1}}') as Record<string, unknown>;
      const fromYaml = parseDocument('"__proto__":\n  x: 1\n') as Record<string, unknown>;
      expect(Object.getPrototypeOf(fromJson)).to.equal(Object.prototype);
      expect(Object.getPrototypeOf(fromYaml)).to.equal(Object.prototype);
      expect(canon(fromJson)).to.equal(canon(fromYaml));
      expect(Object.keys(fromYaml)).to.deep.equal(["__proto__"]);
    });
  });

  describe("refuses YAML features that differ between readers or blow up", () => {
    const cases: Array<[string, string, string]> = [
      ["an alias", "a: &x 1\nb: *x\n", "anchor"],
      ["a billion-laughs alias chain", 'a: &a ["x","x"]\nb: &b [*a,*a]\nc: [*b,*b,*b]\n', "anchor"],
      ["a custom tag", "a: !foo 1\n", "TAG_RESOLVE_FAILED"],
      ["a standard explicit tag", "a: !!str 1\n", "tag"],
      ["a duplicate key", "a: 1\na: 2\n", "DUPLICATE_KEY"],
      ["a numeric key", "1: a\n", "not a string"],
      ["a null key", "~: a\n", "not a string"],
      ["a complex key", "? [a]\n: 1\n", "not a string"],
      ["multiple documents", "a: 1\n---\nb: 2\n", "MULTIPLE_DOCS"],
      ["a YAML 1.1 directive", "%YAML 1.1\n---\na: yes\n", "YAML 1.1"],
      ["a syntax error", "a: [1, 2\n", "acceptable YAML"],
    ];
    for (const [label, source, fragment] of cases) {
      it(label, () => {
        const err = thrown(() => parseDocument(source, { format: "yaml" }));
        expect(err.name).to.equal("InvalidYamlError");
        expect(err.message).to.contain(fragment);
      });
    }

    it("nesting deeper than 64 levels, in either format", () => {
      const deepYaml = "[".repeat(70) + "]".repeat(70);
      expect(thrown(() => parseDocument(deepYaml, { format: "yaml" })).name).to.equal("InvalidYamlError");
      expect(thrown(() => parseDocument(deepYaml, { format: "json" })).name).to.equal("InvalidJsonError");
      const blocks = Array.from({ length: 70 }, (_, i) => `${" ".repeat(i * 2)}a:`).join("\n") + " 1\n";
      expect(thrown(() => parseDocument(blocks, { format: "yaml" })).name).to.equal("InvalidYamlError");
      // 60 levels are fine.
      expect(() => parseDocument("[".repeat(60) + "]".repeat(60))).not.to.throw();
    });

    // Each of these exhausts the heap (aborting the process) or runs for minutes in the plain `yaml` parser.
    for (const [label, source] of [
      ["4 MiB of [", "[".repeat(4 * 1024 * 1024 - 1)],
      ["2 Mi nested block sequences on one line", "- ".repeat(2 * 1024 * 1024 - 1)],
      ["a staircase of indented keys", Array.from({ length: 2000 }, (_, i) => `${" ".repeat(i)}a:`).join("\n")],
      ["nested sequences continued across lines", Array.from({ length: 200 }, (_, i) => " ".repeat(i * 40) + "- ".repeat(20) + "-").join("\n")],
      ["100 000 keys (quadratic duplicate-key check)", Array.from({ length: 100_000 }, (_, i) => `k${i}: ${i}`).join("\n")],
      ["500 000 tiny flow sequences", "- [1]\n".repeat(500_000)],
    ] as const) {
      it(`${label}: refused quickly`, () => {
        const started = Date.now();
        const err = thrown(() => parseDocument(source, { format: "yaml" }));
        expect(err.name).to.equal("InvalidYamlError");
        expect(Date.now() - started).to.be.below(3_000);
      });
    }

    it("accepts a YAML document just under the token limit in about a second", () => {
      const started = Date.now();
      const value = parseDocument(Array.from({ length: 12_000 }, (_, i) => `k${i}: ${i}`).join("\n")) as Record<string, number>;
      expect(value.k11999).to.equal(11999);
      expect(Date.now() - started).to.be.below(3_000);
    });
  });

  describe("numbers", () => {
    for (const [label, json, yaml] of [
      ["a float", '{"a": 1.5}', "a: 1.5"],
      ["an integer beyond 2^53", '{"a": 9007199254740993}', "a: 9007199254740993"],
      ["an exponent overflow", '{"a": 1e400}', "a: 1e400"],
    ] as const) {
      it(`refuses ${label} in both formats`, () => {
        const fromJson = thrown(() => parseDocument(json));
        const fromYaml = thrown(() => parseDocument(yaml));
        expect(fromJson.name).to.be.oneOf(["InvalidDocumentError", "NonFiniteNumberError"]);
        expect(fromYaml.name).to.be.oneOf(["InvalidDocumentError", "NonFiniteNumberError"]);
        expect(fromJson.message).to.match(/(The document|\$)\.a /);
      });
    }

    it("refuses YAML .inf and .nan", () => {
      expect(thrown(() => parseDocument("a: .inf\n")).name).to.equal("InvalidDocumentError");
      expect(thrown(() => parseDocument("a: .nan\n")).name).to.equal("InvalidDocumentError");
    });

    it("accepts safe integers, including negative ones and 1.0 spelled as a float", () => {
      expect(parseDocument('{"a": -9007199254740991, "b": 1.0}')).to.deep.equal({ a: -9007199254740991, b: 1 });
      expect(parseDocument("a: -9007199254740991\nb: 1.0\n")).to.deep.equal({ a: -9007199254740991, b: 1 });
    });
  });

  describe("limits and encoding", () => {
    it("refuses input over maxBytes before parsing", () => {
      const err = thrown(() => parseDocument('{"a": "' + "x".repeat(100) + '"}', { maxBytes: 50 }));
      expect(err.name).to.equal("SizeLimitError");
      expect(thrown(() => parseDocument("a: " + "x".repeat(100), { maxBytes: 50 })).name).to.equal("SizeLimitError");
    });

    it("defaults to a 4 MiB limit", () => {
      const big = `"${"x".repeat(4 * 1024 * 1024)}"`;
      expect(thrown(() => parseDocument(big)).name).to.equal("SizeLimitError");
    });

    it("refuses invalid UTF-8 bytes", () => {
      const err = thrown(() => parseDocument(new Uint8Array([0x61, 0x3a, 0x20, 0xff, 0x0a])));
      expect(err.name).to.equal("InvalidDocumentError");
      expect(err.message).to.contain("UTF-8");
    });

    it("reads bytes like text", () => {
      expect(parseDocument(new TextEncoder().encode("a: 1\n"))).to.deep.equal({ a: 1 });
    });

    it("refuses a lone surrogate from a YAML escape", () => {
      expect(thrown(() => parseDocument('a: "\\ud800"\n')).name).to.equal("InvalidJsonError");
    });

    it("refuses invalid JSON with a typed error", () => {
      expect(thrown(() => parseDocument('{"a": }')).name).to.equal("InvalidJsonError");
    });
  });
});
