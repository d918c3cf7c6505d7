// The verdicts of the verifier, one per pi install (install.mjs: the digests of its session code), in a
// per-user cache folder:
//   <cache>/key            32 random bytes (hex), made on first use, 0600 (cache-files.mjs)
//   <cache>/verdicts.json  { format, verdicts: { <digest>: { verifier, ok, pi, at, failure, mac } } }
//   <cache>/last-report.txt  the last verification's report
//
// A verdict counts only when its MAC (HMAC-SHA256 with the key, over digest, verifier, ok and
// failure) is right, it was given by this verifier (package version + corpus version), and the
// folder and files are the user's own: regular files, not links, not writable by group or others.
// So a corrupt file, a file copied from another machine or user, or one planted by someone else
// reads as "no verdict" and the code is verified again: never as a false "yes". (Code running as
// the user can read the key; nothing on the user's machine can stand against that, nor needs to:
// such code can change pi itself.) The folder's rules are in cache-files.mjs.
import { createHmac, timingSafeEqual } from "node:crypto";
import { lstatSync, rmSync, openSync, writeSync, closeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { cacheDir, ensureDir, keyFor, owned, readKey, readRecords, writeAtomic } from "./cache-files.mjs";

export { cacheDir };

const FORMAT = 1;
/** Bumped whenever the corpus (lib/verify/corpus.mjs) changes what it checks. */
export const CORPUS_VERSION = 2;
/** Who gives a verdict: one given by another package version or corpus is not reused. */
export const VERIFIER = `pi-session-native@${createRequire(import.meta.url)("../../package.json").version}/corpus-${CORPUS_VERSION}`;

function mac(key, digest, record) {
  return createHmac("sha256", key)
    .update(JSON.stringify([FORMAT, digest, record.verifier, record.ok === true, record.failure ?? ""]))
    .digest("hex");
}

function readAll(dir) {
  return readRecords(join(dir, "verdicts.json"), FORMAT, "verdicts");
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
