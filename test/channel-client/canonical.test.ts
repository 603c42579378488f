import { expect } from "chai";
import { keccak256, stringToBytes } from "viem";

import { artifactId, canon, parseCanonical, MAX_JSON_DEPTH } from "../../channel-client/core/canonical";
import * as errors from "../../channel-client/core/errors";
import { thrown } from "../helpers/assert";


describe("canonical JSON (RFC 8785)", () => {
  describe("known answers", () => {
    const vectors: Array<[string, unknown, string]> = [
      ["sorts keys", { b: 2, a: 1 }, '{"a":1,"b":2}'],
      ["sorts nested keys and keeps array order", { z: [3, { y: 1, x: 2 }], a: null }, '{"a":null,"z":[3,{"x":2,"y":1}]}'],
      // RFC 8785 section 3.2.3: keys are ordered by UTF-16 code units, not by code points or locale.
      ["orders keys by UTF-16 code unit", { "\u20ac": 1, "\r": 2, "\ud83d\ude00": 3, "1": 4, "\u00f6": 5 }, '{"\\r":2,"1":4,"ö":5,"€":1,"😀":3}'],
      ["writes numbers in ECMAScript shortest form", [1e21, 1e-7, -0, 0.1, 100, 333333333.3333333], "[1e+21,1e-7,0,0.1,100,333333333.3333333]"],
      ["escapes only what JSON requires", { s: "\u0000\u001f\"\\/\u2028é" }, '{"s":"\\u0000\\u001f\\"\\\\/\u2028é"}'],
      ["keeps literals", [true, false, null, ""], '[true,false,null,""]'],
    ];
    for (const [name, value, expected] of vectors) {
      it(name, () => expect(canon(value)).to.equal(expected));
    }

    it("hashes the canonical bytes for the artifact id", () => {
      expect(artifactId({ b: "2", a: "1" })).to.equal(keccak256(stringToBytes('{"a":"1","b":"2"}')));
    });
  });

  describe("refuses what JSON cannot carry exactly", () => {
    const cases: Array<[string, unknown, string]> = [
      ["NaN", { amount: Number.NaN }, "NonFiniteNumberError"],
      ["Infinity", [Number.POSITIVE_INFINITY], "NonFiniteNumberError"],
      ["-Infinity", { a: { b: Number.NEGATIVE_INFINITY } }, "NonFiniteNumberError"],
      ["a bigint", { amount: 10n }, "InvalidJsonError"],
      ["undefined inside an object", { a: undefined }, "InvalidJsonError"],
      ["a function", { f: () => 1 }, "InvalidJsonError"],
      ["a lone surrogate", { s: "\ud800" }, "InvalidJsonError"],
      ["a class instance", { d: new Date(0) }, "InvalidJsonError"],
    ];
    for (const [name, value, errorName] of cases) {
      it(`rejects ${name} with ${errorName}`, () => {
        const error = thrown(() => canon(value));
        expect(error.name).to.equal(errorName);
        expect(error).to.be.instanceOf(errors.BaseError);
      });
    }

    it("names the path of a non-finite number", () => {
      const error = thrown(() => canon({ a: [1, { amount: Number.NaN }] })) as errors.NonFiniteNumberError;
      expect(error.path).to.equal("$.a[1].amount");
    });

    it("rejects nesting deeper than the limit and accepts it at the limit", () => {
      let deep: unknown = "leaf";
      for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = [deep];
      expect(() => canon(deep)).to.not.throw();
      expect(thrown(() => canon([deep])).name).to.equal("InvalidJsonError");
    });
  });

  describe("parseCanonical", () => {
    it("accepts canonical text and returns the value", () => {
      expect(parseCanonical('{"a":"1","b":[true,null]}')).to.deep.equal({ a: "1", b: [true, null] });
    });

    const nonCanonical: Array<[string, string]> = [
      ["whitespace", '{"a": "1"}'],
      ["unsorted keys", '{"b":"1","a":"2"}'],
      ["a duplicated key", '{"a":"1","a":"1"}'],
      ["a non-shortest number", '{"a":1.0}'],
      ["an unnecessary escape", '{"a":"\\u0041"}'],
      ["a trailing newline", '{"a":"1"}\n'],
    ];
    for (const [name, text] of nonCanonical) {
      it(`rejects ${name} with NonCanonicalJsonError`, () => {
        expect(thrown(() => parseCanonical(text)).name).to.equal("NonCanonicalJsonError");
      });
    }

    it("rejects malformed JSON, oversized input, invalid UTF-8 and deep nesting with typed errors", () => {
      expect(thrown(() => parseCanonical('{"a":')).name).to.equal("InvalidJsonError");
      expect(thrown(() => parseCanonical(`"${"x".repeat(100)}"`, { maxBytes: 50 })).name).to.equal("SizeLimitError");
      expect(thrown(() => parseCanonical(new Uint8Array([0x22, 0xff, 0x22]))).name).to.equal("InvalidJsonError");
      expect(thrown(() => parseCanonical("[".repeat(100_000) + "]".repeat(100_000))).name).to.equal("InvalidJsonError");
    });

    it("walks the text for nesting only when it holds more opening brackets than the limit, and then skips those in strings", () => {
      const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
      // At the limit the count alone passes it; one level deeper the walk refuses it before JSON.parse.
      expect(parseCanonical(nested(MAX_JSON_DEPTH))).to.be.an("array");
      expect(thrown(() => parseCanonical(nested(MAX_JSON_DEPTH + 1))).message).to.match(/^The document nests deeper than 64 levels/);
      // Many brackets, most inside a string: the walk runs and counts only the structural ones.
      const shallow = `{"a":${nested(MAX_JSON_DEPTH - 1)},"b":"${"[{".repeat(200)}"}`;
      expect(parseCanonical(shallow)).to.have.property("b");
      const deep = `{"a":${nested(MAX_JSON_DEPTH)},"b":"${"[{".repeat(200)}"}`;
      expect(thrown(() => parseCanonical(deep)).message).to.match(/^The document nests deeper than 64 levels/);
    });
  });

  describe("errors", () => {
    it("give every error class a literal name equal to its class name", () => {
      const classes = Object.entries(errors).filter(([, v]) => typeof v === "function");
      expect(classes.length).to.be.greaterThan(10);
      for (const [exportName, ErrorClass] of classes) {
        const prototypeName = (Object.create((ErrorClass as { prototype: object }).prototype) as Error).constructor.name;
        expect(prototypeName).to.equal(exportName);
        // Instantiate through the most general constructor shape each class accepts.
        const instance = new (ErrorClass as new (...args: unknown[]) => Error)("$.x", "something", 1);
        expect(instance.name).to.equal(exportName);
      }
    });
  });
});
