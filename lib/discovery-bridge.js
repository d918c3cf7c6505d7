"use strict";
// What SessionManager needs from discovery (lib/discovery.js, the native listing):
// header reads for open(), most-recent and by-id lookups, list/listAll.
const discovery = require("./discovery.js");

/**
 * `open()` reads only the header to learn the cwd. A header beyond the bounded scan falls
 * back to a full load, whose first entry is authoritative (as in the reference).
 */
function readSessionHeaderForOpen(path) {
  try {
    return discovery.readSessionHeader(path);
  } catch (error) {
    if (error?.name !== "SessionHeaderScanLimitError") throw error;
    // Full load: the first entry of a session file is its header.
    const { NativeSession } = require("./native.js");
    const s = new NativeSession(false);
    const { count } = s.loadFile(path);
    const first = count > 0 ? JSON.parse(s.line(0)) : null;
    return first?.type === "session" ? first : null;
  }
}

module.exports = {
  readSessionHeaderForOpen,
  findMostRecentSession: discovery.findMostRecentSession,
  continueRecentPath: discovery.continueRecentPath,
  findById: discovery.findById,
  list: discovery.list,
  listAll: discovery.listAll,
};
