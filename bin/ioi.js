#!/usr/bin/env node
// The `ioi` command: runs cli/ioi.ts through ts-node (type-checked by `npm test`, not here). runProcess exits
// only once stdout has drained, and prints a failure as one sentence, never a stack trace.
"use strict";
const path = require("node:path");
require("ts-node").register({ transpileOnly: true, project: path.join(__dirname, "..", "tsconfig.json") });
require("../cli/ioi").runProcess(process.argv.slice(2));
