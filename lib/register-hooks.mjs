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
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve as resolvePath } from "node:path";
import { fileURLToPath } from "node:url";
import { standIns } from "./stand-ins.mjs";
import { memoDigest, rememberDigest, statKey } from "./verify/digest-memo.mjs";
import { bundleDigest, knownRelease, shortDigest } from "./verify/identity.mjs";
import { chunkPart, installDigest, knownInstall, modulePart, packageOfChunk } from "./verify/install.mjs";
import { CLASS_SIGNATURE, piPackageOf, SESSION_EXPORTS, verifierEnv } from "./verify/locate.mjs";

export { SESSION_EXPORTS };

const PREFIX = "[pi-session-native]";
export const MARKER = `${PREFIX} serving session-manager`;
/** globalThis key: state shared by every copy of this file in the process (and the patched chunk). */
export const STATE_KEY = Symbol.for("pi-session-native.hooks");
export const REPORT_URL = "https://github.com/pi-session-native/pi-session-native/issues";

/** What the native store writes (checked against the chunk's CURRENT_SESSION_VERSION before loading it). */
const NATIVE_SESSION_VERSION = 3;
// Signature checks are literal searches of esbuild's minified-whitespace output, on the bytes as
// loaded (no decoding of the 2.6 MB chunk): Buffer#indexOf costs microseconds.
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

/** `export{a,b as c}` at the end of an esbuild chunk: exported name -> local name. */
export function exportList(bytes) {
  const at = bytes.lastIndexOf("export{");
  if (at === -1) return undefined;
  const end = bytes.indexOf("}", at);
  if (end === -1) return undefined;
  const map = new Map();
  for (const item of textOf(bytes, at + 7, end).split(",")) {
    const parts = item.trim().split(/\s+as\s+/);
    if (!parts[0]) continue;
    map.set((parts[1] ?? parts[0]).trim(), parts[0].trim());
  }
  // a re-export (`export{...}from"..."`) defines nothing here
  if (/^\s*from\s*["']/.test(textOf(bytes, end + 1, end + 40))) return undefined;
  return map;
}

/** Bytes `from`..`to` of a string or Buffer as a string (latin1: a 1:1 copy, enough for ASCII code). */
function textOf(bytes, from, to) {
  return typeof bytes === "string" ? bytes.slice(from, to) : bytes.toString("latin1", from, Math.min(to, bytes.length));
}

const NAME_CHAR = /[\w$.]/;
/**
 * Where `literal` occurs in `from`..`to` at the start of a statement (not inside a longer name), or
 * -1. A Buffer is searched in a view of just that window (no copy): `indexOf` would otherwise scan
 * on to the end of the 2.6 MB chunk on every miss (~0.6 ms each, once per function export).
 */
function declaresIn(bytes, literal, from = 0, to = bytes.length) {
  const lo = Math.max(0, from);
  const hi = Math.min(bytes.length, to);
  // (a match may start before `to` and end after it, as with a plain indexOf)
  const text = typeof bytes === "string" ? bytes : bytes.subarray(lo, hi + literal.length - 1);
  const base = typeof bytes === "string" ? 0 : lo;
  for (let at = text.indexOf(literal, lo - base); at !== -1 && at + base < hi; at = text.indexOf(literal, at + 1)) {
    if (at + base === 0 || !NAME_CHAR.test(textOf(bytes, at + base - 1, at + base))) return at + base;
  }
  return -1;
}

/**
 * Checks a candidate module (a string or the Buffer as loaded) against the signature; returns the
 * assignments to append or the reason it does not match.
 */
export function matchSignature(bytes) {
  const classAt = declaresIn(bytes, CLASS_SIGNATURE);
  if (classAt === -1) return { reason: `the class declaration \`${CLASS_SIGNATURE}\` is not there` };
  // esbuild emits the session functions just before the class (8-14 KB before it in pi 1.3.0 to
  // 1.6.0): look there first, then in the whole module
  const nearFrom = Math.max(0, classAt - 64 * 1024);
  const nearTo = classAt + 4 * 1024;
  const declAt = (local) => {
    for (const [from, to] of [
      [nearFrom, nearTo],
      [0, bytes.length],
    ]) {
      const v = declaresIn(bytes, `var ${local}=`, from, to);
      if (v !== -1) return { at: v, kind: "var" };
      if (declaresIn(bytes, `function ${local}(`, from, to) !== -1) return { kind: "function" };
    }
    return undefined;
  };
  const exported = exportList(bytes);
  if (!exported) return { reason: "no export list at the end of the module" };
  const missing = SESSION_EXPORTS.filter((name) => !exported.has(name));
  if (missing.length) return { reason: `the module does not export ${missing.join(", ")}` };
  const assignments = [];
  let versionDecl;
  for (const name of SESSION_EXPORTS) {
    const local = exported.get(name);
    if (!/^[\w$]+$/.test(local)) return { reason: `unexpected local name ${local} for ${name}` };
    const decl = declAt(local);
    if (!decl) return { reason: `${name} is not a var or function binding` };
    if (name === "CURRENT_SESSION_VERSION") versionDecl = { ...decl, local };
    assignments.push([local, name]);
  }
  const version =
    versionDecl?.at === undefined
      ? null
      : /^(\d+)[;,]/.exec(
          textOf(bytes, versionDecl.at + versionDecl.local.length + 5, versionDecl.at + versionDecl.local.length + 25),
        );
  if (!version || Number(version[1]) !== NATIVE_SESSION_VERSION) {
    return {
      reason: `CURRENT_SESSION_VERSION is ${version ? version[1] : "not a number"}, the native store writes ${NATIVE_SESSION_VERSION}`,
    };
  }
  return { assignments };
}

/**
 * Whether a chunk may be listed known-good as it is (true, or why not): it matches the signature
 * with every session export bound under its own name, the match serveChunk assumes for such a chunk.
 */
export function knownChunkMatches(bytes) {
  const match = matchSignature(bytes);
  if (!match.assignments) return match.reason;
  const renamed = match.assignments.filter(([local, name]) => local !== name);
  return (
    renamed.length === 0 ||
    `session exports bound under other names: ${renamed.map(([l, n]) => `${n} as ${l}`).join(", ")}`
  );
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

/** Where the addon is (`{ file }`), or why there is none (`{ why }`): lib/binary.js's first candidate. */
function locateAddon() {
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
    s.outcome = { served: false, reason: "the native addon does not load" };
    say(
      `${PREFIX} not serving session-manager, pi runs unmodified: the native addon does not load (${String(error?.message ?? error).split("\n")[0]})`,
    );
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

/** Bytes of room after the file in our own read: the stand-ins' assignments are ~700. */
const ROOM = 4096;
const ownReadable = (url) => !url.endsWith(UNBUNDLED_SUFFIX) && !url.includes("?") && !url.includes("#");

/**
 * Reads pi's module at `url` as Node's own load would (the whole regular file), into a buffer with
 * ROOM bytes to spare, and gives `{ bytes, buffer, length, stat }`: `stat` is the digest memo's key
 * (lib/verify/digest-memo.mjs) when the file's stat was the same before and after the read, so the
 * bytes are the file at that stat. undefined when anything is unusual (not a regular file, an
 * error, the file grew while read): Node's own load then reads it, with its own errors.
 */
function readWithRoom(url) {
  let fd;
  try {
    fd = openSync(fileURLToPath(url), "r");
    const before = fstatSync(fd, { bigint: true });
    if (!before.isFile()) return undefined;
    const size = Number(before.size);
    const buffer = Buffer.allocUnsafeSlow(size + ROOM);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > size) return undefined;
    }
    const after = fstatSync(fd, { bigint: true });
    const key = statKey(after);
    const stat = length === size && key !== undefined && key === statKey(before) ? key : undefined;
    return { bytes: buffer.subarray(0, length), buffer, length, stat };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
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

const ownRegister = fileURLToPath(new URL("./register.mjs", import.meta.url));
const PRELOAD_FLAG = /^(--import|--require|-r|--loader|--experimental-loader)(?:=(.*))?$/;

/**
 * Whether someone else's module hook may sit before ours in the chain, so that the load hook must
 * hand pi's modules on to the next hook rather than read them itself (readWithRoom): any code Node
 * runs before the main module (--import, --require, --loader, on the command line or in
 * NODE_OPTIONS) other than this package's own register.mjs may have registered one. Arguments it
 * cannot read (quoted paths with spaces) count as someone else's.
 */
export function othersMayHook(env, execArgv) {
  const args = [...execArgv, ...(env.NODE_OPTIONS ?? "").split(/\s+/).filter(Boolean)];
  for (let i = 0; i < args.length; i++) {
    const flag = PRELOAD_FLAG.exec(args[i]);
    if (!flag) continue;
    const value = flag[2] ?? args[++i] ?? "";
    if (!isOwnRegister(value)) return true;
  }
  return false;
}

function isOwnRegister(value) {
  if (value === "pi-session-native/register") return true;
  try {
    return resolvePath(value.startsWith("file:") ? fileURLToPath(value) : value) === ownRegister;
  } catch {
    return false;
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
