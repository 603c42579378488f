#!/usr/bin/env node
// The `ioi` command. It runs the built JavaScript in dist/ (`npm run build`; `npm ci` builds it through
// `prepare`), with no TypeScript tooling at run time. From a git checkout without dist/, or with
// IOI_CLI_SOURCE=1 (the tests and the demo, so they never run a stale build), it runs the TypeScript
// sources through ts-node instead — a development dependency, 2–3 s slower to start. runProcess exits only
// once stdout has drained, and prints a failure as one sentence, never a stack trace.
"use strict";
const { existsSync } = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const built = path.join(root, "dist", "channel-client", "cli", "ioi.js");
let cli;
if (process.env.IOI_CLI_SOURCE !== "1" && existsSync(built)) {
  cli = require(built);
} else {
  if (process.env.IOI_CLI_SOURCE !== "1") {
    process.stderr.write("ioi: dist/ is not built (run `npm run build`); running the TypeScript sources through ts-node.\n");
  }
  try {
    require.resolve("ts-node");
  } catch {
    process.stderr.write("ioi: neither dist/ nor ts-node is installed; reinstall the package (its tarball ships dist/).\n");
    process.exit(1);
  }
  require("ts-node").register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
  cli = require(path.join(root, "channel-client", "cli", "ioi"));
}
cli.runProcess(process.argv.slice(2));
