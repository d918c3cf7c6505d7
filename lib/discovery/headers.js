"use strict";
// `readSessionHeader` and its two tolerant forms. The bounded scan itself (first line, 1 MiB
// limit) lives in Rust alone (crates/core/src/discovery/mod.rs `read_header`), which also
// throws Node's own fs error for a failed open or read; here the outcome becomes the
// header object, null, or the reference's SessionHeaderScanLimitError.
const { openSync, closeSync } = require("node:fs");
const native = require("../native.js");

class SessionHeaderScanLimitError extends Error {
  constructor(filePath) {
    super(`Session header exceeds ${native.MAX_HEADER_SCAN_BYTES}-byte scan limit: ${filePath}`);
    this.name = "SessionHeaderScanLimitError";
  }
}

/** `readSessionHeader(path)`: the first parsed entry if it is a header, else null. */
function readSessionHeader(filePath) {
  if (typeof filePath !== "string" || filePath.includes("\0")) {
    // Not a path the binding takes: Node's own argument error, as the reference's openSync
    // raises it (a Buffer or URL path, which our callers never pass, is read as a string).
    closeSync(openSync(filePath, "r"));
    return readSessionHeader(String(filePath));
  }
  const r = native.discoveryReadHeader(filePath);
  if (r.kind === "found") return JSON.parse(/** @type {string} */ (r.header));
  if (r.kind === "limit") throw new SessionHeaderScanLimitError(filePath);
  return null;
}

/** The reference's `readSessionHeaderForDiscovery`: any failure is "no header". */
function readSessionHeaderForDiscovery(filePath) {
  try {
    return readSessionHeader(filePath);
  } catch {
    return null;
  }
}

/**
 * `open()` reads only the header to learn the cwd. A header beyond the bounded scan falls
 * back to a full load, whose first entry is authoritative (as in the reference).
 */
function readSessionHeaderForOpen(path) {
  try {
    return readSessionHeader(path);
  } catch (error) {
    if (!(error instanceof SessionHeaderScanLimitError)) throw error;
    const s = new native.NativeSession(false);
    const { count } = s.loadFile(path);
    const first = count > 0 ? JSON.parse(s.line(0)) : null;
    return first?.type === "session" ? first : null;
  }
}

module.exports = {
  SessionHeaderScanLimitError,
  readSessionHeader,
  readSessionHeaderForDiscovery,
  readSessionHeaderForOpen,
};
