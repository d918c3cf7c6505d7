// The pi checkout side of scripts/run-pi-suite.mjs: find packages/coding-agent, pick pi's
// session test files, and refuse a checkout too small to mean anything.
//
// Every function here reads the file system only (no network, no vitest), so
// __test__/pi-suite-runner.test.mjs exercises it on tiny fake checkouts.
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";

/** pi's public repository (1.6.0's package.json names it). */
export const PI_REPOSITORY = "https://github.com/earendil-works/pi";

/**
 * Fewest session test files a checkout must hold for a run to mean anything.
 * pi v0.58.3 (the newest checkout run here, docs/pi-tests.md) has 26, 8 of them under
 * test/session-manager/; the old earendil-works/pi-mono snapshot (0.18.0, before tree sessions)
 * has 2, and a run on it tested nothing of the session manager while printing a pass.
 */
export const MIN_SESSION_TEST_FILES = 20;

/**
 * The install command that works with only the npm registry reachable: a full `npm ci` at the
 * root also installs packages/web-ui, whose xlsx comes from a CDN outside the registry (ENOTFOUND).
 * `--include-workspace-root` brings the root's devDependencies (tsgo, for BUILD_COMMAND);
 * `--ignore-scripts`: the root's `prepare` runs husky, which tests do not need.
 */
export const SETUP_COMMAND =
  "npm ci --ignore-scripts --no-audit --no-fund -w packages/coding-agent --include-workspace-root";

/**
 * Builds the dist/ of the packages pi's extension loader aliases (it loads extensions through jiti,
 * outside vite, from packages/*\/dist). Without it the tests that load extensions fail in every mode.
 * tsgo directly rather than `npm run build`: packages/ai's build first regenerates its model list
 * from the network.
 */
export const BUILD_COMMAND =
  "for p in tui ai agent coding-agent; do node_modules/.bin/tsgo -p packages/$p/tsconfig.build.json || break; done";

/** A problem the user must fix before anything can be tested (the runner exits 2). */
export class SetupError extends Error {}

/**
 * Resolve a checkout argument (its root or its packages/coding-agent directory).
 * Returns { checkout, agentDir }; throws SetupError when it is not a pi checkout.
 */
export function locateCheckout(arg) {
  let agentDir = resolve(arg);
  if (!existsSync(agentDir)) throw new SetupError(`${agentDir} does not exist`);
  agentDir = realpathSync(agentDir);
  if (existsSync(join(agentDir, "packages", "coding-agent"))) agentDir = join(agentDir, "packages", "coding-agent");
  const smSource = join(agentDir, "src", "core", "session-manager.ts");
  if (!existsSync(smSource)) {
    throw new SetupError(
      `${smSource} not found: not a pi checkout (expected packages/coding-agent/src/core/session-manager.ts; clone ${PI_REPOSITORY})`,
    );
  }
  return { checkout: resolve(agentDir, "..", ".."), agentDir };
}

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.test\.[cm]?[jt]sx?$/.test(name)) out.push(p);
  }
  return out;
}

const SM_IMPORT = /src\/core\/session-manager/;

/**
 * pi's session test files, relative to agentDir and sorted: everything under
 * test/session-manager/ plus every other test/**\/*.test.* whose source mentions
 * src/core/session-manager. `direct` is the part under test/session-manager/.
 */
export function sessionTestFiles(agentDir) {
  const files = [];
  const direct = [];
  for (const file of walk(join(agentDir, "test")).sort()) {
    const rel = relative(agentDir, file).split(sep).join("/");
    const isDirect = rel.startsWith("test/session-manager/");
    if (!isDirect && !SM_IMPORT.test(readFileSync(file, "utf8"))) continue;
    files.push(rel);
    if (isDirect) direct.push(rel);
  }
  return { files, direct };
}

/** The package name, version and git commit of the checkout, for the report. */
export function describeCheckout(agentDir, gitHead) {
  let pkg = {};
  try {
    pkg = JSON.parse(readFileSync(join(agentDir, "package.json"), "utf8"));
  } catch {}
  return `${pkg.name ?? "?"}@${pkg.version ?? "?"}, commit ${gitHead || "unknown"}`;
}

/**
 * Throw a SetupError when the checkout holds fewer than `min` session test files: a run on it
 * would print a result about almost nothing. Says how many it found and how many it expected.
 */
export function checkEnoughTests(found, min, what) {
  if (found.files.length >= min) return;
  throw new SetupError(
    [
      `the checkout holds ${found.files.length} session test file(s) (${found.direct.length} under test/session-manager/); expected at least ${min}.`,
      `  checkout: ${what}`,
      "  pi v0.58.3 has 26 (7 under test/session-manager/); an old checkout (pi 0.18.0, from before tree sessions, has 2)",
      "  tests too little of the session manager for a pass to mean anything.",
      `  Use a checkout of ${PI_REPOSITORY} (the repository 1.6.0's package.json names), or pass`,
      `  --min-files N to run a smaller checkout on purpose.`,
    ].join("\n"),
  );
}

/** Throw a SetupError when the checkout's dependencies are not installed. */
export function checkInstalled(checkout, agentDir) {
  if (existsSync(join(checkout, "node_modules")) || existsSync(join(agentDir, "node_modules"))) return;
  throw new SetupError(
    `the checkout has no node_modules: run\n    cd ${checkout} && ${SETUP_COMMAND}\n` +
      "  (a plain `npm ci` at the root fails: packages/web-ui needs xlsx from a CDN outside the npm registry)",
  );
}

/**
 * Apply --filter / --direct-only to the checkout's session test files. Throws when nothing is
 * left (a filter that matches nothing must not pass silently).
 */
export function selectFiles(found, { filters = [], directOnly = false } = {}) {
  const pool = directOnly ? found.direct : found.files;
  const selected = pool.filter((rel) => !filters.length || filters.some((f) => rel.includes(f)));
  if (!selected.length) {
    const how = [directOnly ? "--direct-only" : "", ...filters.map((f) => `--filter ${f}`)].filter(Boolean).join(" ");
    throw new SetupError(`${how} matched none of the checkout's ${found.files.length} session test files`);
  }
  return selected;
}
