// Where an installed pi keeps its session code: the package folder of a file inside it, the bundle
// chunk that defines SessionManager, the unbundled module.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

export const PI_PACKAGE = "@earendil-works/pi-coding-agent";
/** How esbuild declares the class in pi's bundle (a `var`, so the hook can reassign it). */
export const CLASS_SIGNATURE = "var SessionManager=class _SessionManager{";

/** The names pi's bundle chunk exports from its session module, all of them replaced by ours. */
export const SESSION_EXPORTS = Object.freeze([
  "CURRENT_SESSION_VERSION",
  "migrateSessionEntries",
  "parseSessionEntries",
  "getLatestCompactionEntry",
  "sessionEntryToContextMessages",
  "buildContextEntries",
  "buildSessionProjection",
  "buildSessionContext",
  "SessionManager",
]);

/** `{ dir, version }` of the pi package that holds `file`, or undefined. */
export function piPackageOf(file) {
  let dir = dirname(file);
  for (let i = 0; i < 8; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (pkg.name === PI_PACKAGE) return { dir, version: String(pkg.version) };
    } catch {
      // no package.json here
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/** The bundle chunk of pi's package `dir` that declares SessionManager, or undefined. */
export function findSessionChunk(dir) {
  return findSessionChunks(dir)[0];
}

/** Every bundle chunk of pi's package `dir` that declares SessionManager (one in pi 1.3.0 to 1.6.0). */
export function findSessionChunks(dir) {
  return bundleFiles(dir).filter((file) => readFileSync(file).includes(CLASS_SIGNATURE));
}

/** The `.js` files of pi's bundle in package `dir` (its chunks first), in name order. */
export function bundleFiles(dir) {
  const files = [];
  for (const sub of [join("dist", "bundle", "chunks"), join("dist", "bundle")]) {
    let names;
    try {
      names = readdirSync(join(dir, sub))
        .filter((n) => n.endsWith(".js"))
        .sort();
    } catch {
      continue;
    }
    for (const name of names) files.push(join(dir, sub, name));
  }
  return files;
}

/** The unbundled session module of pi's package `dir`, or undefined. */
export function findSessionModule(dir) {
  const file = join(dir, "dist", "core", "session-manager.js");
  return existsSync(file) ? file : undefined;
}

/**
 * The environment for a verifier process: this package's hooks off (PI_SESSION_NATIVE=0, and no
 * `--import` of this package in NODE_OPTIONS), so pi's own session code is what it loads.
 * @param {NodeJS.ProcessEnv} env
 * @returns {NodeJS.ProcessEnv}
 */
export function verifierEnv(env) {
  /** @type {NodeJS.ProcessEnv} */
  const out = { ...env, PI_SESSION_NATIVE: "0" };
  if (out.NODE_OPTIONS) {
    out.NODE_OPTIONS = out.NODE_OPTIONS.replace(/--(import|require|loader)[= ]\S*pi-session-native\S*/g, "").trim();
    if (!out.NODE_OPTIONS) delete out.NODE_OPTIONS;
  }
  return out;
}
