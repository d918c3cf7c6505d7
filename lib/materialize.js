"use strict";
// Entry objects from the Rust-held texts. Rust lays many entries' texts out as ASCII in
// batches of ~1 MB (crates/core/src/materialize.rs) and hands each batch over as strings of ~64 KB
// copied into the V8 heap (src/session.rs, `linesText`); each entry is parsed from its
// slice, as the reference parses each line of its file string. A piece is a young object:
// once its entries are parsed it is garbage for the next scavenge, so the text handed over
// never adds up in memory beside the objects. While JS parses one batch's pieces, Rust lays
// out the next batch on a worker thread.

/** `linesText` position of a text that cannot be read (src/codes.rs). */
const { UNREADABLE } = require("./native.js");
const { stats } = require("./read-stats.js");

/**
 * Parse the entries at `want` (a Uint32Array of entry indices) and call `put(k, object)` for
 * each position k of `want`. A text that cannot be read (file-backed text whose file went
 * away) gives `null`, keeping positions aligned.
 */
function parseEntries(session, want, put) {
  for (let s = 0; s < want.length; ) {
    const { text, starts, ends } = session.linesText(s === 0 ? want : want.subarray(s));
    const n = starts.length;
    if (n === 0) throw new Error("internal: empty entry text batch");
    for (let k = 0; k < n; k++) {
      const a = starts[k];
      put(s + k, a === UNREADABLE ? null : JSON.parse(text.slice(a, ends[k])));
    }
    stats.parsedWhole += n;
    s += n;
  }
}

module.exports = { parseEntries };
