"use strict";
const { test, call, equal } = require("ioi:harness");
const { cases } = require("./cases.js");
for (const [name, fn, args, expected] of cases) {
  test(name, () => equal(call(fn, args, { module: "strings.js" }), expected));
}
