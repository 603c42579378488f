import { expect } from "chai";
import { keccak256, stringToBytes } from "viem";

import { canon } from "../../channel-client/core/canonical";
import { assertBundleHash, BUNDLE_LIMITS, bundleFromJson, bundleHash, bundlePaths, bundleToJson } from "../../arbitration/documents/bundle";
import { thrown } from "../helpers/assert";
import { SUITE } from "./fixtures/samples";

describe("arbitration/bundle", () => {
  it("hashes as keccak256 of its canonical JSON, independent of key order", () => {
    const a = bundleFromJson({ files: { "b.js": "2", "a.js": "1" } });
    const b = bundleFromJson({ files: { "a.js": "1", "b.js": "2" } });
    expect(bundleHash(a)).to.equal(keccak256(stringToBytes('{"files":{"a.js":"1","b.js":"2"}}')));
    expect(bundleHash(a)).to.equal(bundleHash(b));
    expect(Object.keys(a.files)).to.deep.equal(["a.js", "b.js"]);
    expect(canon(bundleToJson(a))).to.equal('{"files":{"a.js":"1","b.js":"2"}}');
  });

  it("round-trips and lists paths in order", () => {
    expect(bundleFromJson(JSON.parse(canon(bundleToJson(SUITE))))).to.deep.equal(bundleFromJson(SUITE));
    expect(bundlePaths(SUITE)).to.deep.equal(["lib/cases.js", "run.js"]);
  });

  it("accepts nested paths, dots, dashes and underscores, and empty files", () => {
    expect(() => bundleFromJson({ files: { "src/a-b/c_d.test.js": "", "_x/y.z.json": "{}", "README": "x" } })).not.to.throw();
  });

  it("checks a bound hash", () => {
    expect(() => assertBundleHash(SUITE, bundleHash(SUITE))).not.to.throw();
    const err = thrown(() => assertBundleHash(SUITE, keccak256("0x00"), "suite"));
    expect(err.name).to.equal("BundleHashMismatchError");
    expect(err.message).to.contain("suite hashes to");
  });

  describe("rejects", () => {
    const bad: Array<[string, unknown, string]> = [
      ["a non-object", "files", "InvalidFieldError"],
      ["a missing files field", {}, "InvalidFieldError"],
      ["an extra field", { files: { a: "" }, extra: 1 }, "UnknownFieldError"],
      ["files as an array", { files: ["a"] }, "InvalidFieldError"],
      ["no files", { files: {} }, "InvalidBundleError"],
      ["a non-string content", { files: { a: 1 } }, "InvalidFieldError"],
      ["an absolute path", { files: { "/etc/passwd": "" } }, "InvalidFieldError"],
      ["a .. segment", { files: { "a/../b": "" } }, "InvalidFieldError"],
      ["a leading ..", { files: { "../b": "" } }, "InvalidFieldError"],
      ["a hidden file", { files: { ".env": "" } }, "InvalidFieldError"],
      ["a backslash", { files: { "a\\b": "" } }, "InvalidFieldError"],
      ["an empty segment", { files: { "a//b": "" } }, "InvalidFieldError"],
      ["a trailing slash", { files: { "a/": "" } }, "InvalidFieldError"],
      ["a space", { files: { "a b": "" } }, "InvalidFieldError"],
      ["a NUL", { files: { "a\u0000": "" } }, "InvalidFieldError"],
      ["a too long path", { files: { ["a".repeat(BUNDLE_LIMITS.maxPathLength + 1)]: "" } }, "InvalidFieldError"],
      ["a file that is also a directory", { files: { a: "", "a/b": "" } }, "InvalidBundleError"],
      ["a lone surrogate", { files: { a: "\ud800" } }, "InvalidBundleError"],
      ["65 files", { files: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}`, ""])) }, "InvalidBundleError"],
      ["a file over 256 KiB", { files: { a: "x".repeat(256 * 1024 + 1) } }, "InvalidBundleError"],
      [
        "more than 1 MiB in all",
        { files: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`f${i}`, "x".repeat(256 * 1024)])) },
        "InvalidBundleError",
      ],
    ];
    for (const [label, value, name] of bad) {
      it(label, () => {
        const err = thrown(() => bundleFromJson(value, "deliverable"));
        expect(err.name).to.equal(name);
        expect(err.message).to.contain("deliverable");
      });
    }

    it("counts size in UTF-8 bytes, not characters", () => {
      // 100 000 three-byte characters: 300 000 bytes > 256 KiB.
      const err = thrown(() => bundleFromJson({ files: { a: "€".repeat(100_000) } }));
      expect(err.name).to.equal("InvalidBundleError");
      expect(err.message).to.contain("300000 bytes");
    });

    it("exactly at the limits is fine", () => {
      expect(() => bundleFromJson({ files: { a: "x".repeat(256 * 1024) } })).not.to.throw();
      const four = Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`f${i}`, "x".repeat(256 * 1024)]));
      expect(() => bundleFromJson({ files: four })).not.to.throw();
      const many = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`f${i}`, ""]));
      expect(() => bundleFromJson({ files: many })).not.to.throw();
    });
  });
});
