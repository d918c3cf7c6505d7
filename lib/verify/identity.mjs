// What pi's session code is, by content: the digest of the code this package replaces.
//
//   bundle:<sha256>  the bundle chunk that defines pi's SessionManager (dist/bundle/chunks/*.js),
//                    the whole file: the session class and free functions and every helper they
//                    call (agent folder, ids, fs wrappers) bundled beside them
//   module:<sha256>  the unbundled dist/core/session-manager.js plus the files of pi it imports
//                    (../config.js, ../utils/paths.js, ./messages.js), in that order
//
// A whole-file digest changes with every pi build even when the session code did not, so every
// new pi goes through the verifier (lib/verify/run.mjs) once; a digest of the session class alone
// would not see a change in a helper it calls (where the agent folder is, say). Hashing the 2.6 MB
// chunk costs ~2 ms, once per process, and only when the chunk loads.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { KNOWN_GOOD } from "./known-good.mjs";

export { KNOWN_GOOD };

/** The session module's own imports inside pi, hashed with it (relative to dist/core/). */
export const MODULE_IMPORTS = ["../config.js", "../utils/paths.js", "./messages.js"];

export function sha256(bytes) {
  return createHash("sha256").update(bytes).digest("hex");
}

/** `bundle:<sha256>` of a chunk's bytes (a Buffer or a string as Node loaded it). */
export function bundleDigest(bytes) {
  return `bundle:${sha256(bytes)}`;
}

/** `module:<sha256>` of dist/core/session-manager.js and the files of pi it imports. */
export function moduleDigest(sessionModuleFile) {
  const hash = createHash("sha256");
  for (const rel of [".", ...MODULE_IMPORTS]) {
    const file = rel === "." ? sessionModuleFile : join(dirname(sessionModuleFile), rel);
    let bytes;
    try {
      bytes = readFileSync(file);
    } catch {
      bytes = Buffer.from(`<missing ${rel}>`);
    }
    hash.update(`${rel}\0${bytes.length}\0`);
    hash.update(bytes);
  }
  return `module:${hash.digest("hex")}`;
}

/** The pi release a digest is known from, or undefined. */
export function knownRelease(digest) {
  return Object.hasOwn(KNOWN_GOOD, digest) ? KNOWN_GOOD[digest] : undefined;
}

/** Short form for messages: `bundle:1a2b3c4d5e6f`. */
export function shortDigest(digest) {
  const at = digest.indexOf(":");
  return `${digest.slice(0, at + 1)}${digest.slice(at + 1, at + 13)}`;
}
