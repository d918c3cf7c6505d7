// The differential harness (lib/verify/differential.mjs): which names are compared, which checks
// can be skipped, loading the two sides, the seeded PRNG.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The reference pi's session module in this repository's devDependency (tests' default side A). */
export const REFERENCE_MODULE_URL = new URL(
  "../../../node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js",
  import.meta.url,
).href;

export const EXPORT_NAMES = [
  "SessionManager",
  "CURRENT_SESSION_VERSION",
  "assertValidSessionId",
  "migrateSessionEntries",
  "parseSessionEntries",
  "getLatestCompactionEntry",
  "sessionEntryToContextMessages",
  "buildContextEntries",
  "projectContextEntry",
  "buildSessionProjection",
  "buildSessionContext",
  "getDefaultSessionDir",
  "loadEntriesFromFile",
  "findMostRecentSession",
];

/** Checks that can be disabled with DIFF_SKIP=name1,name2 (for known, accepted differences). */
export const SKIPPABLE = {
  argIdentity: "getEntry(id).message/data === the object passed to append*()",
  identity: "object identity agreement across getters (getEntries()[k] === getEntry(id) etc.)",
  undefinedKeys: "own keys whose value is undefined must be present on both sides",
  looseArgs: "calls with non-string ids (getChildren(null), getEntry(undefined), ...)",
  freeFns: "differential probes of the module's free functions",
  files: "session file contents compared line by line",
  proto: "prototype of returned objects (plain Object vs class instance)",
};

export function parseSkip(env = process.env) {
  const set = new Set(
    (env.DIFF_SKIP ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
  for (const name of set) {
    if (!(name in SKIPPABLE))
      throw new Error(`DIFF_SKIP: unknown check "${name}" (known: ${Object.keys(SKIPPABLE).join(", ")})`);
  }
  return set;
}

/**
 * The project ships a loader hook (lib/register.mjs) that redirects imports of pi's session module
 * (and patches pi's bundle) to this package. Make sure side A really is the code of `moduleUrl`:
 * its class's source text must occur in that file.
 */
export function assertGenuineReference(ref, moduleUrl = REFERENCE_MODULE_URL) {
  const file = fs.readFileSync(new URL(moduleUrl), "utf8");
  const src = Function.prototype.toString.call(ref.SessionManager);
  if (!/^class _?SessionManager\b/.test(src) || !file.includes(src)) {
    throw new Error(
      `differential: the module loaded from ${moduleUrl} is not that file's own code ` +
        "(a loader hook such as pi-session-native/register redirected it?). Run without --import/NODE_OPTIONS hooks.",
    );
  }
}

/**
 * Side A (`ref`: pi's own session module, default the devDependency's dist/core/session-manager.js,
 * or one of pi's bundle chunks) and side B (`impl`: default this package's index.js; a function is
 * called with side A's module).
 * @param {{ referenceUrl?: string, impl?: any, implName?: string }} [options]
 */
export async function loadModules({ referenceUrl = REFERENCE_MODULE_URL, impl, implName } = {}) {
  const ref = await import(referenceUrl);
  assertGenuineReference(ref, referenceUrl);
  if (impl) return { ref, impl: typeof impl === "function" ? impl(ref) : impl, implName };
  let own;
  try {
    own = require("../../../index.js");
  } catch (error) {
    throw new Error(`differential: failed to load this package's index.js: ${error?.stack ?? error}`);
  }
  if (!own || typeof own.SessionManager !== "function") {
    throw new Error(
      `differential: index.js does not export a SessionManager class (exports: ${Object.keys(own ?? {}).join(", ")})`,
    );
  }
  return { ref, impl: own, implName: "pi-session-native" };
}

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------

export function makeRng(seed) {
  let s = (Math.imul(seed >>> 0, 0x9e3779b1) ^ 0x85ebca6b) >>> 0;
  const float = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng = {
    float,
    int: (n) => Math.floor(float() * n),
    range: (lo, hi) => lo + Math.floor(float() * (hi - lo + 1)),
    bool: (p = 0.5) => float() < p,
    pick: (arr) => arr[Math.floor(float() * arr.length)],
    weighted(table) {
      let total = 0;
      for (const [w] of table) total += w;
      let x = float() * total;
      for (const [w, v] of table) {
        x -= w;
        if (x < 0) return v;
      }
      return table[table.length - 1][1];
    },
  };
  return rng;
}
