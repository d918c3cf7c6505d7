// One verdict per pi install. pi's session code lives in two places that can run: the bundle chunk
// that defines SessionManager (pi's bin, rpc mode, the bundled SDK) and the unbundled
// dist/core/session-manager.js (`node dist/cli.js`, the SDK from dist/index.js). Either is served
// only when both behave as this package: a difference found in one refuses the other too, so a
// corpus that reaches a branch through one and not the other cannot let a changed pi through.
//
//   parts     { chunk, module }: the digests (identity.mjs) of the two, undefined where pi has none
//   known     every part present is known-good (known-good.mjs): served without a verdict
//   install   `install:<sha256>` of the two digests: the key of the verifier's one verdict on them
//             (verdicts.mjs), whose failure names the part and the operation that differed
//
// The hook knows one part when pi loads it; it finds the other here: the module by its fixed path,
// digested with the files it imports (~0.6 ms, or ~0.1 ms of stats when the digest memo has it);
// the chunk, on the unbundled path only, by the export lists at the end of pi's bundle chunks.
import { closeSync, fstatSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { memoDigest, rememberDigest, statKey } from "./digest-memo.mjs";
import { bundleDigest, knownRelease, MODULE_IMPORTS, moduleDigest, sha256 } from "./identity.mjs";
import { bundleFiles, CLASS_SIGNATURE, findSessionModule } from "./locate.mjs";

/**
 * `install:<sha256>` of an install's part digests (the verdict's key).
 * @param {{ chunk?: string, module?: string }} parts
 */
export function installDigest({ chunk, module }) {
  return `install:${sha256(JSON.stringify(["pi-session-code", chunk ?? null, module ?? null]))}`;
}

/**
 * The release every present part is known-good from (`"1.6.0"`, `"1.6.0 / 1.5.0, 1.5.2"` when the
 * two differ), or undefined when a part is not known-good or there is no part at all.
 * @param {{ chunk?: string, module?: string }} parts
 */
export function knownInstall({ chunk, module }) {
  const names = [chunk, module].filter((d) => d !== undefined).map((d) => knownRelease(d));
  if (!names.length || names.some((n) => n === undefined)) return undefined;
  return [...new Set(names)].join(" / ");
}

/** pi's package folder from its bundle chunk's path (dist/bundle/chunks/x.js or dist/bundle/x.js). */
export function packageOfChunk(chunkFile) {
  let dir = dirname(chunkFile);
  if (basename(dir) === "chunks") dir = dirname(dir);
  return basename(dir) === "bundle" && basename(dirname(dir)) === "dist" ? dirname(dirname(dir)) : undefined;
}

/** The memo key of the module and the files it imports (their stat keys), or undefined. */
function moduleStatKey(moduleFile) {
  const keys = [];
  for (const rel of [".", ...MODULE_IMPORTS]) {
    const file = rel === "." ? moduleFile : join(dirname(moduleFile), rel);
    let key;
    try {
      key = statKey(statSync(file, { bigint: true }));
    } catch {
      key = "missing";
    }
    if (key === undefined) return undefined;
    keys.push(key);
  }
  return keys.join("|");
}

/**
 * The module part of pi's package `dir`: `{ file, digest }`, or undefined when pi has no unbundled
 * module. A known-good digest is remembered by the stat keys of its files (digest-memo.mjs).
 */
export function modulePart(dir, env = process.env) {
  const file = dir === undefined ? undefined : findSessionModule(dir);
  if (!file) return undefined;
  const key = moduleStatKey(file);
  const remembered = key === undefined ? undefined : memoDigest(file, key, env);
  if (remembered !== undefined && knownRelease(remembered)) return { file, digest: remembered };
  const digest = moduleDigest(file);
  // the files may have changed while read: remember only when their stats are still the key
  if (key !== undefined && knownRelease(digest) && moduleStatKey(file) === key) {
    try {
      rememberDigest(file, key, digest, env);
    } catch {
      // no cache folder: digested at every start, as before
    }
  }
  return { file, digest };
}

const EXPORT_TAIL = 4096;

/** Whether the last bytes of `file` (esbuild's export list) name SessionManager. */
function exportsSessionManager(file) {
  let fd;
  try {
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(EXPORT_TAIL, size));
    const n = readSync(fd, buf, 0, buf.length, size - buf.length);
    return buf.toString("latin1", 0, n).includes("SessionManager");
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The bundle part of pi's package `dir`: `{ file, digest }` of the chunk that declares
 * SessionManager, or undefined. Reads only the tails of the chunks that do not export it.
 */
export function chunkPart(dir) {
  for (const file of bundleFiles(dir)) {
    if (!exportsSessionManager(file)) continue;
    const bytes = readFileSync(file);
    if (bytes.includes(CLASS_SIGNATURE)) return { file, digest: bundleDigest(bytes) };
  }
  return undefined;
}
