// Synchronous, in-thread module hooks (module.registerHooks, Node >= 22.15) that put pi on the
// native session store. Installed by lib/register.mjs (`--import`) and bin/pi-native.mjs.
//
// Two ways pi loads its session manager, both served:
//
// - The bundle (`dist/bundle/cli.js`, pi's `bin`, also `rpc-entry.js` and the bundled SDK):
//   esbuild inlines SessionManager and the session free functions in one chunk whose file name
//   changes with every build. The `load` hook recognises that chunk by its content, then appends
//   a few assignments to its source: `SessionManager = native.SessionManager; buildSessionContext
//   = native.buildSessionContext; ...`. The exported bindings are `var`/function bindings, so
//   they can be reassigned; the code runs at the end of the chunk's evaluation, before any
//   importer's body (pi's main()), and ES live bindings carry the native values to every importer
//   and to the chunk's own callers (start-up, -c, -r, --session, --fork, /tree, /fork, /resume,
//   compaction, rpc mode, extensions' ctx.sessionManager).
// - The unbundled `dist/core/session-manager.js` (`node dist/cli.js`, the SDK from dist/index.js):
//   the `resolve` hook redirects it to this package's index.mjs.
//
// Fail-safe: when the pi version is not one this hook was tested with, the chunk does not match
// the signature, or the addon does not load, nothing is changed (pi runs unmodified) and one line
// on stderr says why, once per process. PI_SESSION_NATIVE=0 keeps the hooks from being installed;
// PI_SESSION_NATIVE_DEBUG=1 prints `[pi-session-native] serving session-manager: ...` once.
// PI_SESSION_NATIVE_ANY_VERSION=1 skips the version check (the signature check still applies).
import { readFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** pi versions whose bundle this hook was tested against. */
export const TESTED_PI_VERSIONS = ["1.6.0"];
const PI_PACKAGE = "@earendil-works/pi-coding-agent";
const PREFIX = "[pi-session-native]";
export const MARKER = `${PREFIX} serving session-manager`;
/** globalThis key: state shared by every copy of this file in the process (and the patched chunk). */
export const STATE_KEY = Symbol.for("pi-session-native.hooks");

// The session-manager module of pi's bundle exports exactly these names, all of them ours.
export const SESSION_EXPORTS = [
  "CURRENT_SESSION_VERSION",
  "migrateSessionEntries",
  "parseSessionEntries",
  "getLatestCompactionEntry",
  "sessionEntryToContextMessages",
  "buildContextEntries",
  "buildSessionProjection",
  "buildSessionContext",
  "SessionManager",
];
// The class as esbuild emits it (a `var`, so the binding can be reassigned). Signature checks are
// literal searches of esbuild's minified-whitespace output: a regex over the 2.6 MB chunk costs
// milliseconds per pattern, indexOf microseconds.
const CLASS_SIGNATURE = "var SessionManager=class _SessionManager{";
// Cheap pre-filter on the raw bytes: a module that may define pi's SessionManager mentions it in
// its last TAIL bytes (where esbuild puts the export list), and then contains one of the needles.
// pi's bundle is ~10 MB: scanning only tails keeps the hook's own cost near zero.
const TAIL = 64 * 1024;
const CANDIDATE_NEEDLES = [
  "SessionManager=class",
  "SessionManager = class",
  "class SessionManager",
  "class _SessionManager",
];
const UNBUNDLED_SUFFIX = "/pi-coding-agent/dist/core/session-manager.js";

const packageRoot = new URL("../", import.meta.url);
const nativeEntry = fileURLToPath(new URL("../index.js", import.meta.url));
const esmEntry = new URL("../index.mjs", import.meta.url).href;
const require = createRequire(import.meta.url);

function say(line) {
  try {
    writeSync(2, `${line}\n`);
  } catch {
    // stderr closed
  }
}

function state() {
  return globalThis[STATE_KEY];
}

/** The one fail-safe line (once per process); after it nothing more is patched. */
function giveUp(reason) {
  const s = state();
  if (s.outcome) return;
  s.outcome = { served: false, reason };
  say(`${PREFIX} not serving session-manager, pi runs unmodified: ${reason}`);
}

/** Addon files mapped into this process (Linux: /proc/self/maps; elsewhere: require.cache). */
export function loadedAddons() {
  const found = new Set();
  try {
    for (const line of readFileSync("/proc/self/maps", "utf8").split("\n")) {
      const path = line.slice(line.indexOf("/"));
      if (line.includes("/") && /pi-session-native[^/]*\.node$/.test(path)) found.add(path);
    }
  } catch {
    for (const key of Object.keys(require.cache)) if (key.endsWith(".node")) found.add(key);
  }
  return [...found];
}

function loadNative() {
  const s = state();
  if (s.native) return s.native;
  const started = performance.now();
  try {
    const mod = require(nativeEntry);
    s.nativeMs = performance.now() - started;
    if (typeof mod?.SessionManager !== "function") throw new Error(`${nativeEntry} does not export SessionManager`);
    s.native = mod;
    return mod;
  } catch (error) {
    giveUp(`the native addon does not load (${String(error?.message ?? error).split("\n")[0]})`);
    return undefined;
  }
}

function readPiVersion(fromFile) {
  let dir = dirname(fromFile);
  for (let i = 0; i < 8; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (pkg.name === PI_PACKAGE) return { version: pkg.version, dir };
    } catch {
      // no package.json here
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

function checkVersion(file) {
  const s = state();
  if (s.version) return s.version;
  const pi = readPiVersion(file);
  if (!pi) {
    giveUp(`no package.json of ${PI_PACKAGE} above ${file}`);
    return undefined;
  }
  if (!TESTED_PI_VERSIONS.includes(pi.version) && process.env.PI_SESSION_NATIVE_ANY_VERSION !== "1") {
    giveUp(
      `pi ${pi.version} is not a version this hook was tested with (${TESTED_PI_VERSIONS.join(", ")}); ` +
        "PI_SESSION_NATIVE_ANY_VERSION=1 tries anyway",
    );
    return undefined;
  }
  s.version = pi.version;
  return pi.version;
}

/** `export{a,b as c}` at the end of an esbuild chunk: exported name -> local name. */
function exportList(source) {
  const at = source.lastIndexOf("export{");
  if (at === -1) return undefined;
  const end = source.indexOf("}", at);
  if (end === -1) return undefined;
  const map = new Map();
  for (const item of source.slice(at + 7, end).split(",")) {
    const parts = item.trim().split(/\s+as\s+/);
    if (!parts[0]) continue;
    map.set((parts[1] ?? parts[0]).trim(), parts[0].trim());
  }
  // a re-export (`export{...}from"..."`) defines nothing here
  if (/^\s*from\s*["']/.test(source.slice(end + 1, end + 40))) return undefined;
  return map;
}

/**
 * Checks a candidate module against the signature; returns the assignments to append or the
 * reason it does not match.
 */
/** Whether `literal` occurs in `source` at the start of a statement (not inside a longer name). */
function declares(source, literal) {
  for (let at = source.indexOf(literal); at !== -1; at = source.indexOf(literal, at + 1)) {
    if (at === 0 || !/[\w$.]/.test(source[at - 1])) return true;
  }
  return false;
}

export function matchSignature(source, native) {
  const classAt = source.indexOf(CLASS_SIGNATURE);
  if (classAt === -1 || !declares(source, CLASS_SIGNATURE)) {
    return { reason: `the class declaration \`${CLASS_SIGNATURE}\` is not there` };
  }
  // esbuild emits the session functions just before the class (15 KB in 1.6.0): look there
  // first, then in the whole module
  const near = source.slice(Math.max(0, classAt - 256 * 1024), classAt + 64 * 1024);
  const bound = (local) =>
    [near, source].some((text) => declares(text, `var ${local}=`) || declares(text, `function ${local}(`));
  const exported = exportList(source);
  if (!exported) return { reason: "no export list at the end of the module" };
  const missing = SESSION_EXPORTS.filter((name) => !exported.has(name));
  if (missing.length) return { reason: `the module does not export ${missing.join(", ")}` };
  const assignments = [];
  for (const name of SESSION_EXPORTS) {
    const local = exported.get(name);
    if (!/^[\w$]+$/.test(local)) return { reason: `unexpected local name ${local} for ${name}` };
    if (!bound(local)) {
      return { reason: `${name} is not a var or function binding` };
    }
    if (!(name in native)) return { reason: `the native module has no ${name}` };
    assignments.push([local, name]);
  }
  const versionLocal = exported.get("CURRENT_SESSION_VERSION");
  const versionText = near.includes(`var ${versionLocal}=`) ? near : source;
  const at = versionText.indexOf(`var ${versionLocal}=`);
  const version =
    at === -1
      ? null
      : /^(\d+)[;,]/.exec(versionText.slice(at + versionLocal.length + 5, at + versionLocal.length + 25));
  if (!version || Number(version[1]) !== native.CURRENT_SESSION_VERSION) {
    return {
      reason: `CURRENT_SESSION_VERSION is ${version ? version[1] : "not a number"}, the native store writes ${native.CURRENT_SESSION_VERSION}`,
    };
  }
  return { assignments };
}

/** The loaded source as a string or a Buffer view (no copy). */
function bytesOf(source) {
  if (typeof source === "string" || Buffer.isBuffer(source)) return source;
  if (ArrayBuffer.isView(source)) return Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  if (source instanceof ArrayBuffer || source instanceof SharedArrayBuffer) return Buffer.from(source);
  return undefined;
}

function isCandidate(bytes) {
  const tail =
    bytes.length > TAIL
      ? typeof bytes === "string"
        ? bytes.slice(-TAIL)
        : bytes.subarray(bytes.length - TAIL)
      : bytes;
  if (tail.indexOf("SessionManager") === -1) return false;
  return CANDIDATE_NEEDLES.some((n) => bytes.indexOf(n) !== -1);
}

// file:...pi-coding-agent/dist/...js, checked on the string before anything is read
function isPiDistUrl(url) {
  return url.startsWith("file:") && url.endsWith(".js") && url.includes("/pi-coding-agent/dist/");
}

function serveChunk(url, result, bytes) {
  const s = state();
  s.seenCandidate = true;
  if (s.outcome) return result; // served already (a second copy would not be ours) or gave up
  const file = fileURLToPath(url);
  if (!checkVersion(file)) return result;
  // latin1 is a 1:1 byte copy (no UTF-8 decoding): enough for matching ASCII declarations
  const source = typeof bytes === "string" ? bytes : bytes.toString("latin1");
  const native = loadNative();
  if (!native) return result;
  const match = matchSignature(source, native);
  if (!match.assignments) {
    giveUp(`${file} does not match the signature: ${match.reason}`);
    return result;
  }
  s.outcome = { served: true, module: file, names: match.assignments.map(([, name]) => name) };
  s.patch = native;
  const body = match.assignments.map(([local, name]) => `${local}=__psn.${name}`).join(";");
  const appended = `\n;{const __psn=globalThis[Symbol.for("pi-session-native.hooks")]?.patch;if(__psn){${body};globalThis[Symbol.for("pi-session-native.hooks")].applied=true}}\n`;
  // hand back bytes when given bytes: Node decodes the module source itself
  const patched = typeof bytes === "string" ? bytes + appended : Buffer.concat([bytes, Buffer.from(appended, "utf8")]);
  return { ...result, source: patched };
}

function announce(what, names) {
  const s = state();
  if (!s.debug) return;
  const addons = loadedAddons();
  say(
    `${MARKER}: ${what} (pi ${s.version}; ${names ? names.join(", ") : "module redirected"} from ${nativeEntry}; ` +
      `addon ${addons.join(", ") || "not found"}; pid ${process.pid}; addon load ${(s.nativeMs ?? 0).toFixed(1)} ms, hooks ${s.hookMs.toFixed(1)} ms in all)`,
  );
}

// Importers inside this package (but not its node_modules) get the original module, so tests
// and tools of this package may import pi's reference session-manager.js next to ours.
function isOwnModule(parentURL) {
  if (!parentURL?.startsWith(packageRoot.href)) return false;
  return !parentURL.slice(packageRoot.href.length).includes("node_modules/");
}

function resolveHook(specifier, context, nextResolve) {
  const resolved = nextResolve(specifier, context);
  const url = resolved?.url;
  if (!url?.startsWith("file:") || !url.endsWith(UNBUNDLED_SUFFIX) || isOwnModule(context.parentURL)) return resolved;
  try {
    return redirectUnbundled(url, resolved);
  } catch (error) {
    giveUp(`internal error in the resolve hook (${String(error?.message ?? error).split("\n")[0]})`);
    return resolved;
  }
}

function redirectUnbundled(url, resolved) {
  const s = state();
  if (s.outcome && !s.outcome.served) return resolved;
  if (s.outcome?.served && s.outcome.module !== "unbundled") return resolved;
  if (!checkVersion(fileURLToPath(url)) || !loadNative()) return resolved;
  if (!s.outcome) {
    s.outcome = { served: true, module: "unbundled" };
    announce(fileURLToPath(url));
  }
  return { url: esmEntry, format: "module", shortCircuit: true };
}

function loadHook(url, context, nextLoad) {
  const result = nextLoad(url, context);
  if (!isPiDistUrl(url) || state().outcome || result.format !== "module" || result.source == null) return result;
  const s = state();
  const started = performance.now();
  const out = inspectModule(url, result);
  s.hookMs += performance.now() - started;
  if (s.outcome?.served && out !== result) announce(s.outcome.module, s.outcome.names);
  return out;
}

function inspectModule(url, result) {
  const s = state();
  // the unbundled module itself is handled by the resolve hook (loaded only when not redirected)
  if (url.endsWith(UNBUNDLED_SUFFIX)) return result;
  if (url.includes("/dist/bundle/") && !s.bundleSeen) {
    s.bundleSeen = true;
    // pi's bundle is loading: check its version now (one package.json read), so an untested
    // pi is reported before it starts, and at exit say so if no module of it was even a
    // candidate (at exit, because modules may load lazily; never too early)
    if (!checkVersion(fileURLToPath(url))) return result;
    process.once("exit", () => {
      if (!state().outcome && !state().seenCandidate) {
        giveUp(
          "no module of pi's bundle looks like its session manager " +
            `(none mentions SessionManager in its last ${TAIL / 1024} KB, where esbuild puts the export list)`,
        );
      }
    });
  }
  try {
    const bytes = bytesOf(result.source);
    if (bytes === undefined || !isCandidate(bytes)) return result;
    return serveChunk(url, result, bytes);
  } catch (error) {
    giveUp(`internal error in the load hook for ${url} (${String(error?.message ?? error).split("\n")[0]})`);
    return result;
  }
}

/**
 * Installs the hooks once per process. Returns the shared state (for tests and the launcher).
 */
export function installHooks({ env = process.env } = {}) {
  if (globalThis[STATE_KEY]) return globalThis[STATE_KEY];
  const s = { debug: env.PI_SESSION_NATIVE_DEBUG === "1", outcome: undefined, installed: false, hookMs: 0 };
  Object.defineProperty(globalThis, STATE_KEY, { value: s, enumerable: false, configurable: true, writable: true });
  if (env.PI_SESSION_NATIVE === "0") {
    s.outcome = { served: false, reason: "PI_SESSION_NATIVE=0" };
    if (s.debug) say(`${PREFIX} off (PI_SESSION_NATIVE=0), pi runs unmodified`);
    return s;
  }
  let registerHooks;
  try {
    registerHooks = require("node:module").registerHooks;
  } catch {
    // not available
  }
  if (typeof registerHooks !== "function") {
    // pi needs Node >= 22.19 anyway; with the NODE_OPTIONS recipe this runs in every Node
    // process of the shell, so only say it when asked
    s.outcome = { served: false, reason: "no module.registerHooks" };
    if (s.debug)
      say(
        `${PREFIX} not serving session-manager: Node ${process.version} has no module.registerHooks (needs Node >= 22.15)`,
      );
    return s;
  }
  registerHooks({ resolve: resolveHook, load: loadHook });
  s.installed = true;
  return s;
}
