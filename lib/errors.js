"use strict";
// Error shapes of the JS adapter: native filesystem errors with Node's fields, and the EIO of an
// entry whose text changed under an open session.

/** Node's errno numbers (Linux) for the codes Rust's filesystem errors carry. */
const ERRNO = {
  EPERM: -1,
  ENOENT: -2,
  EIO: -5,
  EBADF: -9,
  EACCES: -13,
  EEXIST: -17,
  ENOTDIR: -20,
  EISDIR: -21,
  EMFILE: -24,
  EFBIG: -27,
  ENOSPC: -28,
  EROFS: -30,
  EDQUOT: -122,
};

/**
 * A native filesystem error with Node's error fields (errno, code, syscall, path), read from
 * its message (`CODE: description, syscall 'path'`, src/store.rs `fs_error`); any other error
 * as it is.
 */
function fsError(err) {
  const m = /^(E[A-Z]+): .*, (\w+)(?: '(.*)')?$/s.exec(err?.message ?? "");
  if (!m) return err;
  const fields = { errno: ERRNO[m[1]] ?? -5, code: m[1], syscall: m[2] };
  return Object.assign(new Error(err.message), m[3] === undefined ? fields : { ...fields, path: m[3] });
}

/** Run a native call that may fail on the filesystem; rethrow with Node's error fields. */
function fsCall(fn) {
  try {
    return fn();
  } catch (err) {
    throw fsError(err);
  }
}

/**
 * Every text Rust holds was a complete JSON line when loaded or appended: one that no longer
 * parses was read back from a file another program overwrote under the session `file`.
 * Reported as the I/O error it is (docs/durability.md), never as a SyntaxError; any other
 * error as it is.
 */
function changedUnderUs(err, file = "") {
  if (!(err instanceof SyntaxError)) return err;
  return Object.assign(
    new Error(
      `EIO: i/o error, read '${file}' (the session file was changed by another program under this open session; an entry's text is no longer what was written: ${err.message})`,
    ),
    { code: "EIO", errno: -5, syscall: "read", path: file },
  );
}

module.exports = { ERRNO, fsError, fsCall, changedUnderUs };
