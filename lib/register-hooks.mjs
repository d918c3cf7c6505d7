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
// What is served is decided by what pi's session code is, not by pi's version string, for the whole
// install at once (lib/verify/install.mjs): the digests of the chunk and of the unbundled module
// with the files it imports (lib/verify/identity.mjs) must both be ones this package ships as
// known-good (lib/verify/known-good.mjs: the pi releases it was verified against), or the two
// together passed the verifier on this machine (lib/verify/verdicts.mjs). Session code it
// does not know: pi runs unmodified, one line says so, and the verifier (lib/verify/cli.mjs) starts
// in the background; from the next start on, the code is served if it behaved as ours, and the
// line says which operation differed if not. PI_SESSION_NATIVE_ANY_VERSION=1 serves unverified code
// (the signature check still applies).
//
// Fail-safe: when the code is not verified, the chunk does not match the signature, or the addon
// does not load, nothing is changed (pi runs unmodified) and one line on stderr says why, once per
// process. PI_SESSION_NATIVE=0 keeps the hooks from being installed; PI_SESSION_NATIVE_DEBUG=1
// prints `[pi-session-native] serving session-manager: ...` once.
//
// The jobs are in modules of their own: recognising the chunk (chunk-signature.mjs), reading pi's
// modules (hook-reads.mjs), the stand-ins appended to the chunk (stand-ins.mjs), judging the
// session code (verify/identity.mjs, known-good.mjs, verdicts.mjs). This file decides and serves.
import { existsSync, readFileSync, statSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import {
  NATIVE_SESSION_VERSION,
  TAIL,
  bytesOf,
  exportList,
  isCandidate,
  knownChunkMatches,
  matchSignature,
} from "./chunk-signature.mjs";
import { othersMayHook, readWithRoom } from "./hook-reads.mjs";
import { standIns } from "./stand-ins.mjs";
import { memoDigest, rememberDigest } from "./verify/digest-memo.mjs";
import { bundleDigest, knownRelease, shortDigest } from "./verify/identity.mjs";
import { chunkPart, installDigest, knownInstall, modulePart, packageOfChunk } from "./verify/install.mjs";
import { piPackageOf, SESSION_EXPORTS, verifierEnv } from "./verify/locate.mjs";

// for the tests and scripts that take them from here
export { SESSION_EXPORTS, exportList, knownChunkMatches, matchSignature, othersMayHook };

const PREFIX = "[pi-session-native]";
export const MARKER = `${PREFIX} serving session-manager`;
/** globalThis key: state shared by every copy of this file in the process (and the patched chunk). */
export const STATE_KEY = Symbol.for("pi-session-native.hooks");
export const REPORT_URL = "https://github.com/pi-session-native/pi-session-native/issues";

const UNBUNDLED_SUFFIX = "/pi-coding-agent/dist/core/session-manager.js";
/** Modules the load hook may read itself (readWithRoom): not the unbundled one, no query or hash. */
const ownReadable = (url) => !url.endsWith(UNBUNDLED_SUFFIX) && !url.includes("?") && !url.includes("#");

const packageRoot = new URL("../", import.meta.url);
const nativeEntry = fileURLToPath(new URL("../index.js", import.meta.url));
// What the bundle chunk's stand-ins load: index.js and its lib/ modules as one file
// (scripts/bundle-js.mjs; ~4 ms less than requiring ~25 files), or index.js where it was not made.
const bundledEntry = fileURLToPath(new URL("./bundle.cjs", import.meta.url));
const servedEntry = () => (existsSync(bundledEntry) ? bundledEntry : nativeEntry);
// Milliseconds for the debug line's timings: process.hrtime, because the first performance.now()
// of a process loads Node's perf_hooks (~0.6 ms, more than the hooks' own work on most modules).
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const esmEntry = new URL("../index.mjs", import.meta.url).href;
const verifierCli = fileURLToPath(new URL("./verify/cli.mjs", import.meta.url));
const require = createRequire(import.meta.url);
// which copy of the hooks runs (the debug line): this file, or lib/launcher.bundle.mjs
const hooksFile = fileURLToPath(import.meta.url);

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
  const started = nowMs();
  try {
    const mod = require(nativeEntry);
    s.nativeMs = nowMs() - started;
    if (typeof mod?.SessionManager !== "function") throw new Error(`${nativeEntry} does not export SessionManager`);
    s.native = mod;
    return mod;
  } catch (error) {
    giveUp(`the native addon does not load (${String(error?.message ?? error).split("\n")[0]})`);
    return undefined;
  }
}

/**
 * Whether pi's session code, `parts` (`{ chunk, module }` digests of the install in `dir`), may be
 * served: every part known-good, or the install passed by the verifier on this machine. Otherwise
 * gives up (one line) and, for code never verified here, starts the verifier in the background.
 * `what` names the code in the line.
 */
function trusted(parts, pi, what, dir) {
  const s = state();
  const release = knownInstall(parts);
  if (release) {
    s.trust = `session code known-good (pi ${release})`;
    return true;
  }
  const digest = installDigest(parts);
  const label = `pi ${pi?.version ?? "(version unknown)"}'s session code (${what}, ${shortDigest(digest)})`;
  if (s.env.PI_SESSION_NATIVE_ANY_VERSION === "1") {
    s.trust = "unverified (PI_SESSION_NATIVE_ANY_VERSION=1)";
    return true;
  }
  let verdict;
  try {
    // loaded only for code this package does not know: the known path stays as light as it was
    const { VERIFIER, readVerdict } = require("./verify/verdicts.mjs");
    verdict = readVerdict(digest, VERIFIER, s.env);
  } catch {
    verdict = undefined;
  }
  if (verdict?.ok) {
    s.trust = `verified on this machine ${verdict.at ?? ""}`.trim();
    return true;
  }
  if (verdict) {
    giveUp(
      `${label} does not behave as this package's: ${String(verdict.failure ?? "")
        .split("\n")[0]
        .slice(0, 300)}. ` + `\`pi-native --verify\` prints the report; please report it at ${REPORT_URL}`,
    );
    return false;
  }
  const started = (dir ?? pi?.dir) ? startVerifier(dir ?? pi.dir) : false;
  giveUp(
    `${label} is new to this package${started ? ": it is being verified in the background, and the next start serves it if it behaves as ours" : ""} ` +
      "(`pi-native --verify` verifies it now and prints the report)",
  );
  return false;
}

/** Starts the verifier on pi's package `dir` in a detached, low-priority process without our hooks. */
function startVerifier(dir) {
  const s = state();
  if (s.env.PI_SESSION_NATIVE_NO_VERIFY === "1") return false;
  try {
    const { spawn } = require("node:child_process");
    const env = verifierEnv(s.env);
    const child = spawn(process.execPath, [verifierCli, "--background", dir], {
      detached: true,
      stdio: "ignore",
      env,
      windowsHide: true,
    });
    child.on("error", () => {});
    child.unref();
    s.verifierPid = child.pid;
    return true;
  } catch {
    return false;
  }
}

// file:...pi-coding-agent/dist/...js, checked on the string before anything is read
function isPiDistUrl(url) {
  return url.startsWith("file:") && url.endsWith(".js") && url.includes("/pi-coding-agent/dist/");
}

/**
 * Serves the candidate chunk at `url` (`bytes` as loaded) when its session code is trusted: returns
 * the load result with the stand-ins appended, or `result` as it was. `read` is this hook's own
 * read of the file (readWithRoom), when it made one; `remembered` the chunk's digest from the memo.
 */
function serveChunk(url, result, bytes, read, remembered) {
  const s = state();
  s.seenCandidate = true;
  if (s.outcome) return result; // served already (a second copy would not be ours) or gave up
  const file = fileURLToPath(url);
  const digest = remembered ?? bundleDigest(bytes);
  const release = knownRelease(digest);
  // pi's package (its version, for the lines) is looked up where a line may need it: a known-good
  // chunk is served without it unless the debug line names the version
  const pi = release && !s.debug ? undefined : piPackageOf(file);
  s.version = pi?.version;
  // A known-good chunk is a file whose bytes were matched when its digest was recorded, every
  // session export bound under its own name (scripts/pi-digests.mjs refuses any other): its match
  // is known (~1.5 ms saved at every start). Other code is matched before it is judged.
  const match = release ? { assignments: SESSION_EXPORTS.map((name) => [name, name]) } : matchSignature(bytes);
  if (!match.assignments) {
    giveUp(`${file} does not match the signature: ${match.reason}`);
    return result;
  }
  // the install's other part: the unbundled module beside the chunk (memoized like the chunk)
  const home = packageOfChunk(file) ?? pi?.dir;
  if (!trusted({ chunk: digest, module: modulePart(home, s.env)?.digest }, pi, file, home)) return result;
  if (remembered !== undefined) s.trust += ", digest remembered from an earlier start";
  // Where the addon is, and whether it loads, is found out when pi first uses its session code
  // (resolveServed: lib/native.js looks), not here: a run that never opens a session pays nothing
  // (~5 ms of `pi --version`), and one that does looks once. No binary then means pi's own
  // originals, said in one line. The debug line names the addon, so with it on the look is here.
  if (s.debug) {
    const found = locateAddon();
    if (!found.file) {
      giveUp(`the native addon does not load (${found.why})`);
      return result;
    }
    s.addonFile = found.file;
  }
  if (release && read?.stat && remembered === undefined) {
    try {
      rememberDigest(file, read.stat, digest, s.env);
    } catch {
      // no cache folder (read-only home, ...): the chunk is hashed at every start, as before
    }
  }
  s.outcome = { served: true, module: file, names: match.assignments.map(([, name]) => name) };
  preloadNamedSession(process.argv.slice(2));
  // the addon and our JS load when pi first uses its session code (lib/stand-ins.mjs)
  s.patch = standIns(resolveServed, SESSION_EXPORTS, NATIVE_SESSION_VERSION);
  const key = 'globalThis[Symbol.for("pi-session-native.hooks")]';
  const originals = match.assignments.map(([local, name]) => `${name}:${local}`).join(",");
  const body = match.assignments.map(([local, name]) => `${local}=__psn.${name}`).join(";");
  const appended = `\n;{const __s=${key},__psn=__s?.patch;if(__psn){__s.originals={${originals}};${body};__s.applied=true}}\n`;
  // hand back bytes when given bytes (Node decodes the module source itself); into the room left
  // after our own read when it fits, so the 2.6 MB chunk is not copied again (~2 ms)
  if (typeof bytes === "string") return { ...result, source: bytes + appended };
  const tail = Buffer.from(appended, "utf8");
  if (read && read.buffer.length - read.length >= tail.length) {
    tail.copy(read.buffer, read.length);
    return { ...result, source: read.buffer.subarray(0, read.length + tail.length) };
  }
  return { ...result, source: Buffer.concat([bytes, tail]) };
}

/**
 * `pi --session <file>`: the file is read and indexed on a thread of the addon now, while pi
 * loads the rest of itself (~130 ms before it opens the session; a 700 MB session takes ~300 ms
 * to load), and its open takes what was read if the file has not changed since
 * (crates/core/src/preload.rs). pi's own parser takes the value after the first `--session`;
 * a value that is not a file here (a session id) starts nothing. Never fails pi: without the
 * addon, nothing is started and the open reads the file as before.
 * @param {string[]} args pi's arguments
 */
function preloadNamedSession(args) {
  const at = args.indexOf("--session");
  const value = at >= 0 ? args[at + 1] : undefined;
  if (!value || state().env.PI_SESSION_NATIVE_PRELOAD === "0") return;
  try {
    const file = resolvePath(value);
    if (!statSync(file).isFile()) return;
    const found = locateAddon();
    if (found.file) require(found.file).preloadSession(file);
  } catch {
    // no such file, or no addon: pi's open reads the file itself
  }
}

/** Where the addon is (`{ file }`), or why there is none (`{ why }`): lib/binary.js's first candidate. */
export function locateAddon() {
  try {
    const found = require("./binary.js").candidates({ firstOnly: true });
    if (found.files.length) return { file: found.files[0] };
    if (found.explicit) return { why: `PI_SESSION_NATIVE_BINARY=${found.explicit} does not exist` };
    return { why: `no binary for ${found.id.describe}${found.tried.length ? `; ${found.tried.join("; ")}` : ""}` };
  } catch (error) {
    return { why: String(error?.message ?? error).split("\n")[0] };
  }
}

/**
 * What pi's session names forward to once pi first uses them: this package, or, when the addon
 * does not load after all (a broken file), pi's own originals, said on stderr.
 */
function resolveServed() {
  const s = state();
  const started = nowMs();
  try {
    const entry = servedEntry();
    const mod = require(entry);
    s.nativeMs = nowMs() - started;
    if (typeof mod?.SessionManager !== "function") throw new Error(`${entry} does not export SessionManager`);
    return mod;
  } catch (error) {
    const reason = `the native addon does not load (${String(error?.message ?? error).split("\n")[0]})`;
    s.outcome = { served: false, reason };
    say(`${PREFIX} not serving session-manager, pi runs unmodified: ${reason}`);
    return s.originals;
  }
}

function announce(what, names) {
  const s = state();
  if (!s.debug) return;
  const addons = loadedAddons();
  say(
    `${MARKER}: ${what} (pi ${s.version}; ${names ? names.join(", ") : "module redirected"} from ${names ? servedEntry() : nativeEntry}; ` +
      `${addons.length ? `addon ${addons.join(", ")}` : `addon ${s.addonFile} (loads when pi first uses its session code)`}; ` +
      `${s.trust}; pid ${process.pid}; hooks in ${hooksFile}, ${s.hookMs.toFixed(1)} ms in all)`,
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
  if (!s.outcome) {
    const started = nowMs();
    const file = fileURLToPath(url);
    const pi = piPackageOf(file);
    s.version = pi?.version;
    // dist/core/session-manager.js: the package is two folders up; the bundle chunk is the other part
    const home = resolvePath(dirname(file), "..", "..");
    const parts = { module: modulePart(home, s.env)?.digest, chunk: chunkPart(home)?.digest };
    const ok = trusted(parts, pi, file, home);
    s.hookMs += nowMs() - started;
    if (!ok || !loadNative()) return resolved;
    s.outcome = { served: true, module: "unbundled" };
    announce(file);
  }
  return { url: esmEntry, format: "module", shortCircuit: true };
}

function loadHook(url, context, nextLoad) {
  if (!isPiDistUrl(url) || state().outcome) return nextLoad(url, context);
  const s = state();
  const read = s.ownReads && context?.format === "module" && ownReadable(url) ? readWithRoom(url) : undefined;
  const result = read ? { format: "module", source: read.bytes, shortCircuit: true } : nextLoad(url, context);
  if (result.format !== "module" || result.source == null) return result;
  // the hooks' own work (the debug line): the read, ours or Node's, is what plain pi does too
  const started = nowMs();
  const out = inspectModule(url, result, read);
  s.hookMs += nowMs() - started;
  if (s.outcome?.served && out !== result) announce(s.outcome.module, s.outcome.names);
  if (s.outcome) dropHooks(s.outcome.module !== "unbundled");
  return out;
}

/**
 * Removes the load hook once the chunk is served or refused, and then the resolve hook too unless
 * it is serving the unbundled module: while any hook is registered, every later `import` and
 * `require` of the process (pi's lazy chunks, our own ~25 modules at the first session call) goes
 * through the hook machinery, ~0.1-0.2 ms each. In pi's bundled bin the unbundled module is not
 * loaded (extensions get the bundle's own exports, jiti's virtual modules).
 */
function dropHooks(resolveToo) {
  const s = state();
  for (const key of resolveToo ? ["loadHooks", "resolveHooks"] : ["loadHooks"]) {
    try {
      s[key]?.deregister?.();
    } catch {
      // not removable: it returns at once for every module from now on
    }
    s[key] = undefined;
  }
}

function inspectModule(url, result, read) {
  const s = state();
  // the unbundled module itself is handled by the resolve hook (loaded only when not redirected)
  if (url.endsWith(UNBUNDLED_SUFFIX)) return result;
  if (url.includes("/dist/bundle/") && !s.bundleSeen) {
    s.bundleSeen = true;
    // at exit, say so if no module of pi's bundle was even a candidate (at exit, because modules
    // may load lazily; never too early)
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
    if (bytes === undefined) return result;
    // a file the memo knows (the chunk served at a start before, unchanged since) is the chunk: no
    // need to look for the class in it (~0.6 ms)
    const memo = read?.stat ? memoDigest(fileURLToPath(url), read.stat, s.env) : undefined;
    const remembered = memo !== undefined && knownRelease(memo) ? memo : undefined;
    if (remembered === undefined && !isCandidate(bytes)) return result;
    return serveChunk(url, result, bytes, read, remembered);
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
  const s = { debug: env.PI_SESSION_NATIVE_DEBUG === "1", env, outcome: undefined, installed: false, hookMs: 0 };
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
  s.ownReads = !othersMayHook(env, process.execArgv);
  // both are removed once the bundle chunk is served or refused (dropHooks): the modules pi loads
  // after it take Node's own path
  s.resolveHooks = registerHooks({ resolve: resolveHook });
  s.loadHooks = registerHooks({ load: loadHook });
  s.installed = true;
  return s;
}
