// A memo of the session chunk's digest (identity.mjs `bundleDigest`), keyed by what the file is on
// disk, so that a start does not hash pi's 2.6 MB chunk again (~2 ms of every pi run that loads it),
// and of the unbundled module's (install.mjs: its key the stat keys of the module and the files
// it imports, joined by `|`), so that the install's other part costs four stats (~0.1 ms):
//   <cache>/digests.json  { format, files: { <path>: { stat, digest, mac } } }
//
// `stat` is the file's device, inode, size, and modification and change times in nanoseconds,
// taken before and after reading the bytes that gave `digest` (the two equal: nothing wrote the
// file meanwhile). A write to the file moves its change time, which no user process can set back,
// so a file with the same stat key holds the same bytes. A file system with whole-second times
// (both times on a second boundary) is not memoized: two writes in one second could look the same.
//
// An entry counts only with the right MAC (HMAC-SHA256 with the cache folder's key, over the path,
// stat key and digest) in the user's own folder (cache-files.mjs): a corrupt, copied or planted
// file reads as absent and the chunk is hashed as before, never as a false match. Only known-good
// digests (known-good.mjs) are recorded, and the hook takes no other from the memo; at most
// MAX_FILES paths (a chunk and a module per pi install) are kept, the most recently recorded.
import { createHmac, timingSafeEqual } from "node:crypto";
import { join } from "node:path";
import { cacheDir, ensureDir, keyFor, owned, readKey, readRecords, writeAtomic } from "./cache-files.mjs";

const FORMAT = 1;
const FILE = "digests.json";
const MAX_FILES = 16;
const NS_PER_S = 1_000_000_000n;

/**
 * The memo key of a file from its `fstat(..., { bigint: true })`, or undefined where the file
 * system's times are too coarse to tell two writes apart.
 * @param {Pick<import("node:fs").BigIntStats, "dev" | "ino" | "size" | "mtimeNs" | "ctimeNs">} st
 */
export function statKey(st) {
  if (st.mtimeNs % NS_PER_S === 0n && st.ctimeNs % NS_PER_S === 0n) return undefined;
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

function mac(key, file, stat, digest) {
  return createHmac("sha256", key)
    .update(JSON.stringify([FORMAT, file, stat, digest]))
    .digest("hex");
}

function macOk(key, file, record) {
  if (typeof record?.mac !== "string" || typeof record.stat !== "string" || typeof record.digest !== "string")
    return false;
  const want = Buffer.from(mac(key, file, record.stat, record.digest), "hex");
  const got = Buffer.from(record.mac, "hex");
  return got.length === want.length && timingSafeEqual(got, want);
}

function readFiles(dir) {
  return readRecords(join(dir, FILE), FORMAT, "files");
}

// read once per process (a start looks up each of pi's first modules)
let loaded;
function memo(env) {
  const dir = cacheDir(env);
  if (loaded?.dir !== dir) {
    const trusted = owned(dir, "dir");
    const key = trusted ? readKey(dir) : undefined;
    loaded = { dir, key, files: key ? readFiles(dir) : {} };
  }
  return loaded;
}

/** Drops what this process read of the memo (tests that change the files under it). */
export function forgetMemo() {
  loaded = undefined;
}

/** The recorded digest of `file` when it is still what it was (`stat` the same), or undefined. */
export function memoDigest(file, stat, env = process.env) {
  const { key, files } = memo(env);
  if (!key || !Object.hasOwn(files, file)) return undefined;
  const record = files[file];
  if (record?.stat !== stat || !macOk(key, file, record)) return undefined;
  return record.digest;
}

/** Records the digest of `file` at `stat` (kept beside the others; the file is rewritten atomically). */
export function rememberDigest(file, stat, digest, env = process.env) {
  const dir = cacheDir(env);
  ensureDir(dir);
  const key = keyFor(dir);
  const files = readFiles(dir);
  delete files[file];
  const kept = Object.entries(files)
    .filter(([path, record]) => macOk(key, path, record))
    .slice(-(MAX_FILES - 1));
  const record = { stat, digest, mac: mac(key, file, stat, digest) };
  const next = Object.fromEntries([...kept, [file, record]]);
  // a shortcut only: no fsync (a torn file reads as absent, and the chunk is hashed again)
  writeAtomic(join(dir, FILE), `${JSON.stringify({ format: FORMAT, files: next }, null, 1)}\n`, { sync: false });
  loaded = { dir, key, files: next };
}
