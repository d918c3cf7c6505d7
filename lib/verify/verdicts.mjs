// The verdicts of the verifier, per digest of pi's session code, in a per-user cache folder:
//   <cache>/key            32 random bytes (hex), made on first use, 0600
//   <cache>/verdicts.json  { format, verdicts: { <digest>: { verifier, ok, pi, at, failure, mac } } }
//   <cache>/last-report.txt  the last verification's report
//
// A verdict counts only when its MAC (HMAC-SHA256 with the key, over digest, verifier, ok and
// failure) is right, it was given by this verifier (package version + corpus version), and the
// folder and files are the user's own: regular files, not links, not writable by group or others.
// So a corrupt file, a file copied from another machine or user, or one planted by someone else
// reads as "no verdict" and the code is verified again: never as a false "yes". (Code running as
// the user can read the key; nothing on the user's machine can stand against that, nor needs to:
// such code can change pi itself.)
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";

const FORMAT = 1;
/** Bumped whenever the corpus (lib/verify/corpus.mjs) changes what it checks. */
export const CORPUS_VERSION = 1;
/** Who gives a verdict: one given by another package version or corpus is not reused. */
export const VERIFIER = `pi-session-native@${createRequire(import.meta.url)("../../package.json").version}/corpus-${CORPUS_VERSION}`;
const MAX_BYTES = 4 * 1024 * 1024;

/** The cache folder: PI_SESSION_NATIVE_CACHE_DIR, else the platform's per-user cache folder. */
export function cacheDir(env = process.env) {
  if (env.PI_SESSION_NATIVE_CACHE_DIR) return env.PI_SESSION_NATIVE_CACHE_DIR;
  const home = homedir();
  if (process.platform === "win32")
    return join(env.LOCALAPPDATA || join(home, "AppData", "Local"), "pi-session-native", "Cache");
  if (process.platform === "darwin") return join(home, "Library", "Caches", "pi-session-native");
  return join(env.XDG_CACHE_HOME || join(home, ".cache"), "pi-session-native");
}

/** Whether `path` is the user's own regular file or folder (not a link, not writable by others). */
function owned(path, kind) {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return false;
  }
  if (kind === "dir" ? !st.isDirectory() : !st.isFile()) return false;
  if (process.platform === "win32") return true;
  if (typeof process.getuid === "function" && st.uid !== process.getuid()) return false;
  return (st.mode & 0o022) === 0;
}

function readOwned(path, kind = "file") {
  if (!owned(path, kind)) return undefined;
  try {
    const bytes = readFileSync(path);
    return bytes.length > MAX_BYTES ? undefined : bytes.toString("utf8");
  } catch {
    return undefined;
  }
}

/** Writes `text` to `path` through a temp file and a rename (readers see the old or the new file). */
function writeAtomic(path, text) {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, path);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
}

function ensureDir(dir) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!owned(dir, "dir")) throw new Error(`${dir} is not a folder of this user's alone`);
}

function readKey(dir) {
  const text = readOwned(join(dir, "key"));
  return text && /^[0-9a-f]{64}$/.test(text.trim()) ? Buffer.from(text.trim(), "hex") : undefined;
}

function keyFor(dir) {
  const key = readKey(dir);
  if (key) return key;
  const fresh = randomBytes(32);
  try {
    const fd = openSync(join(dir, "key"), "wx", 0o600);
    try {
      writeSync(fd, fresh.toString("hex"));
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    if (error?.code !== "EEXIST") throw error;
  }
  // another process may have made it first: the key is the one on disk
  const onDisk = readKey(dir);
  if (!onDisk) throw new Error(`the key in ${dir} is not usable`);
  return onDisk;
}

function mac(key, digest, record) {
  return createHmac("sha256", key)
    .update(JSON.stringify([FORMAT, digest, record.verifier, record.ok === true, record.failure ?? ""]))
    .digest("hex");
}

function readAll(dir) {
  const text = readOwned(join(dir, "verdicts.json"));
  if (!text) return {};
  try {
    const data = JSON.parse(text);
    if (data?.format !== FORMAT || typeof data.verdicts !== "object" || data.verdicts === null) return {};
    return data.verdicts;
  } catch {
    return {};
  }
}

/**
 * The recorded verdict on `digest` by `verifier`: `{ ok, failure, pi, at }`, or undefined when there
 * is none that can be trusted.
 */
export function readVerdict(digest, verifier, env = process.env) {
  const dir = cacheDir(env);
  if (!owned(dir, "dir")) return undefined;
  const key = readKey(dir);
  if (!key) return undefined;
  const record = readAll(dir)[digest];
  if (!record || typeof record !== "object" || record.verifier !== verifier || typeof record.mac !== "string")
    return undefined;
  const want = Buffer.from(mac(key, digest, record), "hex");
  const got = Buffer.from(record.mac, "hex");
  if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
  return {
    ok: record.ok === true,
    failure: typeof record.failure === "string" ? record.failure : undefined,
    pi: record.pi,
    at: record.at,
  };
}

/**
 * Records a verdict (kept beside the others; the file is rewritten atomically).
 * @param {string} digest
 * @param {string} verifier
 * @param {{ ok: boolean, failure?: string, pi?: string }} verdict
 * @param {NodeJS.ProcessEnv} [env]
 */
export function writeVerdict(digest, verifier, { ok, failure, pi }, env = process.env) {
  const dir = cacheDir(env);
  ensureDir(dir);
  const key = keyFor(dir);
  const verdicts = readAll(dir);
  const record = { verifier, ok: ok === true, pi, at: new Date().toISOString() };
  if (!ok) record.failure = String(failure ?? "unknown difference");
  record.mac = mac(key, digest, record);
  verdicts[digest] = record;
  writeAtomic(join(dir, "verdicts.json"), `${JSON.stringify({ format: FORMAT, verdicts }, null, 1)}\n`);
}

/** Saves the text of the last verification's report (for `pi-native --verify --last`). */
export function writeReport(text, env = process.env) {
  const dir = cacheDir(env);
  ensureDir(dir);
  writeAtomic(join(dir, "last-report.txt"), text);
}

/**
 * Takes the verification lock (one verifier at a time per user); returns a release function, or
 * undefined when another verifier holds it (a lock older than `staleMs` is taken over).
 */
export function takeLock(env = process.env, staleMs = 5 * 60_000) {
  const dir = cacheDir(env);
  ensureDir(dir);
  const file = join(dir, "verify.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (error) {
      if (error?.code !== "EEXIST") throw error;
      let age = 0;
      try {
        age = Date.now() - lstatSync(file).mtimeMs;
      } catch {
        continue;
      }
      if (age < staleMs) return undefined;
      rmSync(file, { force: true });
    }
  }
  return undefined;
}
