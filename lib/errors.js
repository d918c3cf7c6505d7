"use strict";
// Error shapes the JS adapter makes itself: the EIO of an entry whose text changed under an
// open session. (Native filesystem errors arrive with Node's fields already set: src/error.rs.)

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

module.exports = { changedUnderUs };
