#!/usr/bin/env node
// The `ioi` command: runs channel-client/cli.ts through ts-node (type-checked by `npm test`, not here).
"use strict";
const path = require("node:path");
require("ts-node").register({ transpileOnly: true, project: path.join(__dirname, "..", "tsconfig.json") });
const { main } = require("../channel-client/cli");
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
