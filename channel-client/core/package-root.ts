/**
 * The package's root directory, whether this module runs from the sources (`channel-client/core/`) or from the
 * build (`dist/channel-client/core/`), in this repository or installed under `node_modules/ioi-settlement/`.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name === "ioi-settlement") return dir;
      } catch {
        // Not ours (or unreadable): keep walking up.
      }
    }
    if (path.dirname(dir) === dir) return path.join(start, "..");
  }
}

export const PACKAGE_ROOT = findPackageRoot(__dirname);
