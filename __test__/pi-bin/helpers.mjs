// Shared helpers for the end-to-end tests of the real, bundled `pi` bin (dist/bundle/cli.js)
// with and without this package's hook. vitest runs under Node 20; pi runs under Node 22
// (scripts/node22.mjs). Every pi run gets its own HOME and PI_CODING_AGENT_DIR.
//
// Which pi: the devDependency (node_modules/@earendil-works/pi-coding-agent, 1.6.0) unless
// PI_E2E_PI_PACKAGE names another installed copy of pi's package directory (as
// scripts/pi-releases.mjs does for every published release). PI_SESSION_NATIVE_ANY_VERSION is
// the one PI_* variable of the caller passed on to the pi runs (the hook's version override);
// a test that needs it unset says so in its own env.
//
// Three ways to start pi:
//   "ref"      node22 <pi bin> ...                                   (pi unmodified)
//   "native"   node22 bin/pi-native.mjs ...   (PI_CODING_AGENT_BIN = <pi bin>, the one switch)
//   "options"  NODE_OPTIONS="--import <abs>/lib/register.mjs" node22 <pi bin> ...  (the recipe)
import { execFile, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { rpcRecords } from "./rpc-records.mjs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { findNode22 } from "../../scripts/node22.mjs";
import { Normalizer } from "../pi/normalize.mjs";
import { MODEL, PROVIDER, writeAgentConfig } from "../../scripts/model-server.mjs";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const node22 = findNode22();

/** Fresh temp dir (real path). */
export function tempDir(prefix) {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}
export const devPiPackage = join(repoRoot, "node_modules", "@earendil-works", "pi-coding-agent");
export const piPackage = resolvePiPackage(process.env.PI_E2E_PI_PACKAGE);
export const piBin = join(piPackage, "dist", "bundle", "cli.js");
/** pi's version, from the package under test (tests that print it compare with this). */
export const piVersion = JSON.parse(readFileSync(join(piPackage, "package.json"), "utf8")).version;
/** Whether the pi under test is `version` or newer (stable x.y.z versions). */
export function piAtLeast(version) {
  const a = piVersion.split(/[.-]/).map(Number);
  const b = version.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
}
/**
 * The node_modules folder pi's dependencies resolve from: the one that holds
 * @earendil-works/pi-coding-agent (npm's flat layout), for tests that copy pi's package.
 */
export const piNodeModules = dirname(dirname(piPackage));

/** The pi package directory to test: the devDependency, or `dir` when given (checked). */
function resolvePiPackage(dir) {
  if (!dir) return devPiPackage;
  const abs = realpathSync(resolve(dir));
  const manifest = join(abs, "package.json");
  const pkg = existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")) : {};
  if (pkg.name !== "@earendil-works/pi-coding-agent" || !existsSync(join(abs, "dist", "bundle", "cli.js")))
    throw new Error(
      `PI_E2E_PI_PACKAGE=${dir} is not an installed @earendil-works/pi-coding-agent with dist/bundle/cli.js`,
    );
  if (!abs.endsWith(join("node_modules", "@earendil-works", "pi-coding-agent")))
    throw new Error(
      `PI_E2E_PI_PACKAGE=${dir} must be <prefix>/node_modules/@earendil-works/pi-coding-agent (npm's layout)`,
    );
  return abs;
}
export const launcher = join(repoRoot, "bin", "pi-native.mjs");
export const registerScript = join(repoRoot, "lib", "register.mjs");
export const MARKER = "[pi-session-native] serving session-manager";
export const FAILSAFE = "[pi-session-native] not serving session-manager, pi runs unmodified:";

const dirs = [];
/** Removes the temp dirs of this test file (PI_E2E_KEEP=1 keeps and lists them). */
export function cleanup() {
  if (process.env.PI_E2E_KEEP === "1") console.log(`[pi-bin e2e] kept:\n  ${dirs.join("\n  ")}`);
  else for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * A fresh root: <root>/home, <root>/agent (models.json + settings.json for the scripted model),
 * <root>/project (the cwd). Prefixes of equal length keep the two runs' paths equally long.
 */
export function makeRoot(prefix, baseUrl, settings = {}) {
  const root = tempDir(prefix);
  dirs.push(root);
  for (const d of ["home", "agent", "project"]) mkdirSync(join(root, d), { recursive: true });
  writeAgentConfig(join(root, "agent"), baseUrl, settings);
  writeFileSync(join(root, "project", "notes.txt"), "alpha\nbeta\ngamma\n");
  return root;
}

/** Environment for one pi run in `root`: nothing inherited that changes pi or the hook. */
export function piEnv(root, how, extra = {}) {
  const env = { ...process.env };
  const anyVersion = env.PI_SESSION_NATIVE_ANY_VERSION;
  for (const k of Object.keys(env)) if (k.startsWith("PI_") || k === "NODE_OPTIONS") delete env[k];
  if (anyVersion !== undefined) env.PI_SESSION_NATIVE_ANY_VERSION = anyVersion;
  Object.assign(env, {
    HOME: join(root, "home"),
    PI_CODING_AGENT_DIR: join(root, "agent"),
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    NO_COLOR: "1",
  });
  if (how === "native") {
    env.PI_CODING_AGENT_BIN = extra.bin ?? piBin;
    env.PI_SESSION_NATIVE_DEBUG = "1";
  }
  if (how === "options") {
    env.NODE_OPTIONS = `--import ${registerScript}`;
    env.PI_SESSION_NATIVE_DEBUG = "1";
  }
  for (const [k, v] of Object.entries(extra.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** argv (after node22) for one way of starting pi. */
export function piArgv(how, args, bin = piBin, launcherFile = launcher) {
  return how === "native" ? [launcherFile, ...args] : [bin, ...args];
}

/**
 * Runs pi to completion, stdin from /dev/null; resolves {code, signal, stdout, stderr}.
 * @param {string} root
 * @param {string} how
 * @param {string[]} args
 * @param {{ cwd?: string, bin?: string, env?: NodeJS.ProcessEnv, timeout?: number, launcherFile?: string }} [options] launcherFile: another file than bin/pi-native.mjs to start as the launcher
 */
export function runPi(root, how, args, { cwd = join(root, "project"), bin, env, timeout = 90_000, launcherFile } = {}) {
  return new Promise((resolvePromise) => {
    const child = execFile(
      node22,
      piArgv(how, args, bin, launcherFile),
      { cwd, env: piEnv(root, how, { bin, env }), timeout, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolvePromise({ args, code: error ? (error.code ?? 1) : 0, signal: error?.signal ?? null, stdout, stderr });
      },
    );
    child.stdin.end(); // like </dev/null: nothing piped in
  });
}

/** Same as runPi but throws with pi's output on a non-zero exit. */
export async function runPiOk(root, how, args, options) {
  const r = await runPi(root, how, args, options);
  if (r.code !== 0)
    throw new Error(`pi ${args.join(" ")} (${how}) exited ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
  return r;
}

export function readJsonl(file) {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** Session files under <root>/agent/sessions, oldest first (names start with the creation time). */
export function sessionFiles(root) {
  const base = join(root, "agent", "sessions");
  if (!existsSync(base)) return [];
  const out = [];
  for (const d of readdirSync(base))
    for (const f of readdirSync(join(base, d))) if (f.endsWith(".jsonl")) out.push(join(base, d, f));
  return out.sort();
}

/** A normalizer for one root (paths, the encoded session-dir name, ids, timestamps, other strings). */
export function normalizerFor(root, extra = []) {
  const encoded = root.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-");
  return new Normalizer([root, encoded, ...extra]);
}

/** Session files of a root with ids/timestamps/paths replaced, in file order. */
export function normalizedSessions(root, files = sessionFiles(root), norm = normalizerFor(root)) {
  const parsed = files.map((f) => ({ path: f, lines: readJsonl(f) }));
  for (const f of parsed) norm.registerEntries(f.lines);
  return norm.value(parsed);
}

/** Number of times the serving marker is on stderr. */
export function markerCount(stderr) {
  return stderr.split(MARKER).length - 1;
}

/** .node files of this package mapped into a live process (Linux). */
export function mappedAddons(pid) {
  const maps = readFileSync(`/proc/${pid}/maps`, "utf8");
  const found = new Set();
  for (const line of maps.split("\n")) {
    const at = line.indexOf("/");
    if (at !== -1 && /pi-session-native[^/]*\.node$/.test(line.slice(at))) found.add(line.slice(at));
  }
  return [...found];
}

/** The addon path the debug marker line names (the hook reads /proc/self/maps after loading it). */
export function addonInMarker(stderr) {
  const m = /addon ([^;]*\.node)/.exec(stderr.slice(stderr.indexOf(MARKER)));
  return m ? m[1] : undefined;
}

/** Starts `pi --mode rpc` and gives a small JSONL client. */
export function startRpc(root, how, args = [], { cwd = join(root, "project") } = {}) {
  const child = spawn(node22, piArgv(how, ["--mode", "rpc", ...args]), {
    cwd,
    env: piEnv(root, how),
    stdio: ["pipe", "pipe", "pipe"],
  });
  const { records, waitFor, exited, stderr } = rpcRecords(child);
  let n = 0;
  const send = async (command) => {
    const id = `req-${++n}`;
    const afterIndex = records.length;
    child.stdin.write(`${JSON.stringify({ id, ...command })}\n`);
    const res = await waitFor((r) => r.type === "response" && r.id === id, `response to ${command.type}`);
    return { res, afterIndex };
  };
  /** Sends a prompt and waits for the run to settle. */
  const prompt = async (message) => {
    const { res, afterIndex } = await send({ type: "prompt", message });
    if (!res.success) throw new Error(`prompt failed: ${JSON.stringify(res)}`);
    if (res.data?.disposition !== "handled") {
      await waitFor((r) => r.type === "agent_settled" && records.indexOf(r) >= afterIndex, "agent_settled");
    }
    return res;
  };
  const close = async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const r = await exited;
    clearTimeout(timer);
    return r;
  };
  return { child, records, send, prompt, close, stderr, waitFor };
}

export { MODEL, PROVIDER };

/**
 * A real copy of pi's package at <tmp>/node_modules/@earendil-works/pi-coding-agent (module URLs
 * must point into the copy, so no symlinks there), its dependencies symlinked next to it.
 * `editChunk(source)` returns the new text of the bundle chunk that defines SessionManager (found
 * by content); `editPackage(pkg)` changes its package.json object in place.
 * @param {{ editChunk?: (source: string) => string, editModule?: (source: string) => string, editPackage?: (pkg: any) => void, from?: string }} [options]
 */
export function copyPiPackage({ editChunk, editModule, editPackage, from = piPackage } = {}) {
  const base = tempDir("pi-copy-");
  dirs.push(base);
  const nm = join(base, "node_modules");
  const scope = join(nm, "@earendil-works");
  mkdirSync(scope, { recursive: true });
  const fromNm = resolve(from, "..", "..");
  for (const name of readdirSync(fromNm)) {
    if (name === "@earendil-works" || name.startsWith(".")) continue;
    symlinkSync(join(fromNm, name), join(nm, name));
  }
  for (const name of readdirSync(join(fromNm, "@earendil-works"))) {
    if (name !== "pi-coding-agent") symlinkSync(join(fromNm, "@earendil-works", name), join(scope, name));
  }
  const pkg = join(scope, "pi-coding-agent");
  cpSync(from, pkg, { recursive: true, dereference: true });
  const chunks = join(pkg, "dist", "bundle", "chunks");
  const found = readdirSync(chunks)
    .map((f) => join(chunks, f))
    .filter((file) => readFileSync(file, "utf8").includes(CLASS_SIGNATURE));
  if (found.length !== 1) throw new Error(`expected one chunk defining SessionManager, found ${found.length}`);
  const [chunk] = found;
  const original = readFileSync(chunk, "utf8");
  if (editChunk) {
    const edited = editChunk(original);
    if (edited === original) throw new Error("editChunk changed nothing");
    writeFileSync(chunk, edited);
  }
  if (editModule) {
    const file = join(pkg, "dist", "core", "session-manager.js");
    const text = readFileSync(file, "utf8");
    const edited = editModule(text);
    if (edited === text) throw new Error("editModule changed nothing");
    writeFileSync(file, edited);
  }
  if (editPackage) {
    const file = join(pkg, "package.json");
    const data = JSON.parse(readFileSync(file, "utf8"));
    editPackage(data);
    writeFileSync(file, JSON.stringify(data, null, "\t"));
  }
  return { base, pkg, bin: join(pkg, "dist", "bundle", "cli.js"), chunk, original };
}
const CLASS_SIGNATURE = "var SessionManager=class _SessionManager{";
