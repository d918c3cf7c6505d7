// The per-user cache folder that the verifier's verdicts (verdicts.mjs) and the chunk digest memo
// (digest-memo.mjs) live in, and the rules both follow to read and write it:
//   <cache>/key   32 random bytes (hex), made on first use, 0600: the HMAC key of both files
//
// A file is read only when the folder and the file are the user's own: regular, not links, not
// writable by group or others. Anything else (a file planted by someone else, a link) reads as
// absent. Files are replaced through a temp file and a rename, so readers see the old or the new
// file, never half of one.
import { randomBytes } from "node:crypto";
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
import { homedir } from "node:os";
import { join } from "node:path";

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
export function owned(path, kind) {
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

/** The text of the user's own file `path` (at most 4 MiB), or undefined. */
export function readOwned(path, kind = "file") {
  if (!owned(path, kind)) return undefined;
  try {
    const bytes = readFileSync(path);
    return bytes.length > MAX_BYTES ? undefined : bytes.toString("utf8");
  } catch {
    return undefined;
  }
}

/**
 * The records of the user's own JSON file `path`, `{ format, <field>: { ... } }`: its `field`
 * object when the file is there, parses and has this `format`, else `{}` (a corrupt, foreign or
 * planted file reads as empty).
 */
export function readRecords(path, format, field) {
  const text = readOwned(path);
  if (!text) return {};
  try {
    const data = JSON.parse(text);
    const records = data?.format === format ? data[field] : undefined;
    return typeof records === "object" && records !== null ? records : {};
  } catch {
    return {};
  }
}

/**
 * Writes `text` to `path` through a temp file and a rename (readers see the old or the new file).
 * `sync: false` skips the fsync, for a file that is only a shortcut (a torn one reads as absent).
 */
export function writeAtomic(path, text, { sync = true } = {}) {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
    if (sync) fsyncSync(fd);
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

export function ensureDir(dir) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!owned(dir, "dir")) throw new Error(`${dir} is not a folder of this user's alone`);
}

/** The folder's HMAC key, or undefined when there is none that can be trusted. */
export function readKey(dir) {
  const text = readOwned(join(dir, "key"));
  return text && /^[0-9a-f]{64}$/.test(text.trim()) ? Buffer.from(text.trim(), "hex") : undefined;
}

/** The folder's HMAC key, made on first use. */
export function keyFor(dir) {
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
